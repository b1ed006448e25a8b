"""Every reader of a built dataset checks it first (one read path: ``DatasetFolder``).

A shard rewritten with one label changed (valid Parquet), one flipped byte inside a stored image,
a truncated shard and a ``build_info.json`` whose self-hash is wrong are refused by ``score``,
``predict`` and ``evaluate`` in one line naming the file (with both hashes where they differ); a
file's sha256 is remembered against its stat, so a later read re-hashes only what changed; what is
remembered is advisory (a row that disagrees is re-hashed, a locked cache is skipped at once).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from imagenet_suite import cli, files
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import DatasetFolderError
from imagenet_suite.scoring.outputs import ModelOutputs
from tests.fixtures.imagenet_layouts import make_val_images, write_folders_layout

ROWS = 12


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("verified-reads")
    manual = write_folders_layout(root / "manual", make_val_images(ROWS))
    return build_dataset(
        "imagenet_val", root / "out", ["default"], options=BuildOptions(manual_dir=manual, shard_size=5, progress=False)
    )


@pytest.fixture
def folder(built, tmp_path) -> Path:
    """A private copy of the build, free to damage."""
    return Path(shutil.copytree(built, tmp_path / built.name))


@pytest.fixture(scope="module")
def outputs(built, tmp_path_factory) -> Path:
    """Outputs right on every row: the true label gets the top logit."""
    table = DatasetFolder(built).read_table("default", "validation", ["id", "label"])
    logits = torch.zeros(table.num_rows, 1000)
    logits[torch.arange(table.num_rows), torch.tensor(table.column("label").to_pylist())] = 5.0
    path = tmp_path_factory.mktemp("outputs") / "outputs.pt"
    return ModelOutputs(values=logits, ids=table.column("id").to_pylist()).save(path)


def first_shard(folder: Path) -> Path:
    return sorted((folder / "default").glob("validation-*.parquet"))[0]


def relabel_one_row(folder: Path) -> Path:
    """Rewrite the first shard as valid Parquet, one label changed, everything else as built."""
    shard = first_shard(folder)
    parquet = pq.ParquetFile(shard)
    table = parquet.read()
    labels = table.column("label").to_pylist()
    labels[0] = (labels[0] + 1) % 1000
    table = table.set_column(table.schema.get_field_index("label"), "label", pa.array(labels, type=pa.int64()))
    pq.write_table(table, shard, row_group_size=parquet.metadata.row_group(0).num_rows)
    return shard


def flip_a_byte_inside_an_image(folder: Path) -> Path:
    """Flip one byte of a stored JPEG's scan data in place: same size, valid Parquet, another image."""
    shard = first_shard(folder)
    data = bytearray(shard.read_bytes())
    image = pq.read_table(shard, columns=["image"]).column("image")[0].as_py()["bytes"]
    position = data.find(image[-64:])
    assert position > 0, "the stored image bytes are not found in the shard (compressed column?)"
    data[position + 10] ^= 0x01
    shard.write_bytes(bytes(data))
    return shard


def tamper_build_info(folder: Path) -> Path:
    info_path = folder / "build_info.json"
    info = json.loads(info_path.read_text())
    info["version"] = "1.0.1"
    info_path.write_text(json.dumps(info))
    return info_path


def truncate_shard(folder: Path) -> Path:
    shard = first_shard(folder)
    shard.write_bytes(shard.read_bytes()[:-100])
    return shard


DAMAGE = {
    "relabelled shard": (relabel_one_row, "bytes, build_info.json says"),
    "flipped image byte": (flip_a_byte_inside_an_image, "sha256 "),
    "tampered build_info": (tamper_build_info, "differs from its build_info_sha256"),
    "truncated shard": (truncate_shard, "truncated or modified"),
}


def one_error_line(capsys, command: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"imagenet-suite {command}: error: "), err
    return err[0]


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_score_refuses_a_damaged_build_in_one_line(folder, outputs, damage, capsys):
    assert cli.main(["score", str(folder), "--outputs", str(outputs)]) == 0
    assert "top1_accuracy" in capsys.readouterr().out
    damaged, expected = DAMAGE[damage]
    path = damaged(folder)
    assert cli.main(["score", str(folder), "--outputs", str(outputs)]) == 2
    line = one_error_line(capsys, "score")
    assert str(path) in line and expected in line


def test_a_changed_image_byte_names_both_hashes_and_the_way_out(folder, outputs, capsys):
    shard = flip_a_byte_inside_an_image(folder)
    built = json.loads((folder / "build_info.json").read_text())["configs"]["default"]["files"]
    recorded = built[f"default/{shard.name}"]["sha256"]
    assert cli.main(["score", str(folder), "--outputs", str(outputs)]) == 2
    line = one_error_line(capsys, "score")
    assert recorded in line and files.sha256_file(shard) in line
    assert f"imagenet-suite verify {folder}" in line and "rebuild" in line


@pytest.mark.parametrize("damage", ["flipped image byte", "truncated shard"])
def test_predict_refuses_a_damaged_build_before_any_work(folder, damage, tmp_path, capsys):
    DAMAGE[damage][0](folder)
    out = tmp_path / "val.pt"
    argv = ["predict", str(folder), "--model", "timm:test_resnet", "--weights", "none", "--out", str(out)]
    assert cli.main([*argv, "--workers", "0", "--no-progress"]) == 2
    assert first_shard(folder).name in one_error_line(capsys, "predict")
    assert not out.exists() and not out.with_name(out.name + ".partial").exists()


def test_evaluate_refuses_a_damaged_build(folder, tmp_path, capsys):
    relabel_one_row(folder)
    argv = ["evaluate", "--model", "timm:test_resnet", "--weights", "none", "--datasets", str(folder)]
    assert cli.main([*argv, "--out", str(tmp_path / "run"), "--workers", "0", "--no-progress"]) == 2
    assert first_shard(folder).name in one_error_line(capsys, "evaluate")


def test_a_hash_is_remembered_and_a_changed_file_is_hashed_again(folder, monkeypatch):
    monkeypatch.setattr(files, "RACY_NS", 0)  # the files were just written: let them be remembered at once
    hashed = []
    real = files.sha256_file
    monkeypatch.setattr(files, "sha256_file", lambda path: hashed.append(Path(path).name) or real(path))
    shards = sorted(p.name for p in (folder / "default").glob("*.parquet"))

    DatasetFolder(folder).read_table("default", "validation", ["label"])
    assert sorted(hashed) == shards
    hashed.clear()
    DatasetFolder(folder).read_table("default", "validation", ["label"])  # a new reader, a later command
    assert hashed == []

    shard = first_shard(folder)
    stat = shard.stat()
    flip_a_byte_inside_an_image(folder)
    os.utime(shard, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same size and mtime: only the ctime tells
    with pytest.raises(DatasetFolderError, match=shard.name):
        DatasetFolder(folder).read_table("default", "validation", ["label"])
    assert hashed == [shard.name]


def test_a_racily_clean_file_is_not_remembered(folder, monkeypatch):
    hashed = []
    real = files.sha256_file
    monkeypatch.setattr(files, "sha256_file", lambda path: hashed.append(path) or real(path))
    shard = first_shard(folder)
    os.utime(shard)  # changed just now: its stat could miss a change within the same timestamp tick
    for _ in range(2):
        DatasetFolder(folder).split_files("default", "validation")
    assert sum(Path(p).name == shard.name for p in hashed) == 2


def test_an_unwritable_hash_cache_only_costs_the_hash(folder, tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv(files.HASH_CACHE_ENV, str(blocker / "file-hashes.sqlite"))
    table = DatasetFolder(folder).read_table("default", "validation", ["id"])
    assert table.num_rows == ROWS


def test_extra_files_and_input_datasets_go_through_the_same_check(folder):
    reader = DatasetFolder(folder)
    with pytest.raises(DatasetFolderError, match="not listed"):
        reader.file("default/elsewhere.npy")
    assert reader.check_files() == sum(p.stat().st_size for p in (folder / "default").glob("*.parquet"))
    flip_a_byte_inside_an_image(folder)
    with pytest.raises(DatasetFolderError, match=first_shard(folder).name):
        DatasetFolder(folder).check_files()


def test_build_info_sha256_is_the_identity_of_the_build(folder):
    assert DatasetFolder(folder).build_info_sha256 == files.sha256_file(folder / "build_info.json")


# -- the hash cache is advisory --------------------------------------------------------------------------


def _cache_rows(where: Path) -> dict[str, str]:
    import sqlite3

    with contextlib.closing(sqlite3.connect(where)) as connection:
        return dict(connection.execute("SELECT path, sha256 FROM hashes").fetchall())


def test_a_cache_row_that_disagrees_with_the_file_is_hashed_again_not_believed(folder, outputs, monkeypatch, capsys):
    """An intact shard whose remembered hash is wrong (a stale or edited row) is re-hashed and served, as
    ``verify`` would; the row is put right. Only the file's own bytes can fail it."""
    import sqlite3

    monkeypatch.setattr(files, "RACY_NS", 0)  # the shards were just written: let them be remembered at once
    assert cli.main(["score", str(folder), "--outputs", str(outputs)]) == 0
    shard = str(first_shard(folder).resolve())
    where = files.hash_cache_path()
    assert _cache_rows(where)[shard] == files.sha256_file(shard)
    with contextlib.closing(sqlite3.connect(where)) as connection, connection:
        connection.execute("UPDATE hashes SET sha256 = ? WHERE path = ?", ("0" * 64, shard))
    capsys.readouterr()
    assert cli.main(["score", str(folder), "--outputs", str(outputs)]) == 0, capsys.readouterr().err
    assert "top1_accuracy" in capsys.readouterr().out
    assert _cache_rows(where)[shard] == files.sha256_file(shard)

    flip_a_byte_inside_an_image(folder)  # the file itself changed: refused as before
    assert cli.main(["score", str(folder), "--outputs", str(outputs)]) == 2
    assert "modified or corrupt" in one_error_line(capsys, "score")


@pytest.fixture
def locked_cache(tmp_path, monkeypatch):
    """A hash cache that another process holds under an exclusive SQLite lock while the test runs."""
    where = tmp_path / "locked" / "file-hashes.sqlite"
    where.parent.mkdir()
    monkeypatch.setenv(files.HASH_CACHE_ENV, str(where))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys\n"
            f"c = sqlite3.connect({str(where)!r}, isolation_level=None)\n"
            "c.execute('CREATE TABLE IF NOT EXISTS hashes (path TEXT PRIMARY KEY, stamp TEXT, sha256 TEXT)')\n"
            "c.execute('BEGIN EXCLUSIVE')\n"
            "print('locked', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield where
    finally:
        holder.stdin.close()
        holder.wait(30)


def test_a_cache_locked_by_another_process_is_skipped_at_once(folder, outputs, locked_cache, monkeypatch, capsys):
    """The lookup does not wait for the lock (SQLite's busy timeout was 30 s a lookup: minutes for a
    ``score``); the file is hashed instead. The bounds below are loose: the point is seconds, not minutes."""
    monkeypatch.setattr(files, "RACY_NS", 0)  # a lookup and a write for every file
    shard = first_shard(folder)
    started = time.monotonic()
    assert files.cached_sha256(shard) == files.sha256_file(shard)
    assert time.monotonic() - started < 5

    started = time.monotonic()
    assert cli.main(["score", str(folder), "--outputs", str(outputs)]) == 0, capsys.readouterr().err
    assert time.monotonic() - started < 20
    assert "top1_accuracy" in capsys.readouterr().out
