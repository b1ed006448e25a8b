"""Outputs stay verified: a rebuild never keeps or blesses a shard whose bytes changed.

A finished shard is kept only if its sha256 equals the hash recorded when it was written (in the
build journal of an interrupted run, or in build_info.json of a finished one); anything else is
rebuilt, and the folder ends byte-identical to a fresh build. build_info.json is never rewritten to
match a changed file, and a corrupt build_info.json stops the build with one line.
"""

from __future__ import annotations

import json

import pytest

import imagenet_suite.build.runner as runner
from imagenet_suite.build.runner import JOURNAL
from imagenet_suite.build.verify import verify_folder
from imagenet_suite.errors import DatasetFolderError
from tests.helpers import build_val, folder_bytes, run_cli


def flip_byte_inside_an_image(shard, image: bytes) -> None:
    """Flip one byte in the middle of ``image``'s bytes as stored in ``shard`` (same size, footer intact)."""
    data = bytearray(shard.read_bytes())
    start = data.find(image)
    assert start > 0, "the image's bytes are stored uncompressed in the shard"
    data[start + len(image) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))


def shard_of(folder, config: str, index: int):
    return sorted((folder / config).glob("*.parquet"))[index]


@pytest.mark.parametrize("num_proc", [1, 2])
def test_a_rotted_shard_is_rebuilt_and_the_folder_ends_as_a_fresh_build(val_layouts, val_images, tmp_path, num_proc):
    fresh = build_val(val_layouts, "tar", tmp_path / "fresh", shard_size=4)
    folder = build_val(val_layouts, "tar", tmp_path / "rot", shard_size=4)
    recorded = (folder / "build_info.json").read_bytes()
    rotted = shard_of(folder, "default", 1)  # holds images 5..8
    flip_byte_inside_an_image(rotted, val_images[5].data)
    kept = {p.name: p.stat().st_mtime_ns for p in (folder / "default").glob("*.parquet") if p != rotted}
    with pytest.raises(DatasetFolderError, match="sha256 differs"):
        verify_folder(folder)

    build_val(val_layouts, "tar", tmp_path / "rot", shard_size=4, num_proc=num_proc)

    assert (folder / "build_info.json").read_bytes() == recorded  # not rewritten to match the rotted file
    assert folder_bytes(folder) == folder_bytes(fresh)
    assert {p.name: p.stat().st_mtime_ns for p in (folder / "default").glob("*.parquet") if p != rotted} == kept
    verify_folder(folder)


def test_a_config_not_rebuilt_keeps_its_recorded_hash(val_layouts, val_images, tmp_path):
    folder = build_val(val_layouts, "kaggle", tmp_path, configs=("default", "boxes"), shard_size=6)
    flip_byte_inside_an_image(shard_of(folder, "boxes", 0), val_images[0].data)
    build_val(val_layouts, "kaggle", tmp_path, configs=("default",), shard_size=6)  # boxes is not rebuilt
    with pytest.raises(DatasetFolderError, match=r"boxes/validation-00000-of-00002.parquet: sha256 differs"):
        verify_folder(folder)
    build_val(val_layouts, "kaggle", tmp_path, configs=("boxes",), shard_size=6)
    verify_folder(folder)


def test_an_interrupted_build_resumes_only_shards_whose_bytes_match_the_journal(
    val_layouts, val_images, tmp_path, monkeypatch
):
    fresh = build_val(val_layouts, "tar", tmp_path / "fresh", shard_size=3)
    real_rows = runner._checked_rows

    def fail_on_the_third_shard(builder, prepared, shard):
        if shard.index == 2:
            raise RuntimeError("simulated crash while writing the third shard")
        return real_rows(builder, prepared, shard)

    monkeypatch.setattr(runner, "_checked_rows", fail_on_the_third_shard)
    with pytest.raises(RuntimeError, match="simulated crash"):
        build_val(val_layouts, "tar", tmp_path / "out", shard_size=3)
    monkeypatch.setattr(runner, "_checked_rows", real_rows)
    folder = tmp_path / "out" / fresh.name
    published = sorted(p.name for p in (folder / "default").glob("*.parquet"))
    assert published == ["validation-00000-of-00004.parquet", "validation-00001-of-00004.parquet"]
    assert not list(folder.rglob("*.incomplete")), "a failed run removes its unfinished files"
    journal = [json.loads(line) for line in (folder / JOURNAL).read_text().splitlines()]
    assert sorted(e["file"] for e in journal) == [f"default/{name}" for name in published]

    flip_byte_inside_an_image(folder / "default" / published[0], val_images[1].data)
    untouched = (folder / "default" / published[1]).stat().st_mtime_ns
    build_val(val_layouts, "tar", tmp_path / "out", shard_size=3)

    assert folder_bytes(folder) == folder_bytes(fresh)
    assert (folder / "default" / published[1]).stat().st_mtime_ns == untouched  # kept: its bytes match the journal
    assert not (folder / JOURNAL).exists()  # build_info.json holds the record now


@pytest.mark.parametrize("damage", ["not json", "edited"])
def test_a_corrupt_build_info_stops_the_build_with_one_line(val_layouts, tmp_path, damage):
    folder = build_val(val_layouts, "tar", tmp_path / "out", shard_size=6)
    info_path = folder / "build_info.json"
    if damage == "not json":
        info_path.write_bytes(info_path.read_bytes()[:100])
    else:
        info = json.loads(info_path.read_text())
        info["configs"]["default"]["splits"]["validation"]["num_examples"] += 1
        info_path.write_text(json.dumps(info, indent=1))
    manual = val_layouts["tar"]
    result = run_cli(
        "build",
        "imagenet_val",
        "--manual-dir",
        str(manual),
        "--pins",
        str(manual / "checksums.tsv"),
        "--out",
        str(tmp_path / "out"),
        "--shard-size",
        "6",
        "--no-progress",
        check=False,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert str(info_path) in result.stderr and (
        "not valid JSON" in result.stderr or "corrupt or modified" in result.stderr
    )

    info_path.unlink()  # what the message says to do: every shard is then checked and rebuilt
    fresh = build_val(val_layouts, "tar", tmp_path / "fresh", shard_size=6)
    build_val(val_layouts, "tar", tmp_path / "out", shard_size=6)
    assert folder_bytes(folder) == folder_bytes(fresh)
