"""The build runner: determinism, worker count, resume after SIGKILL, card/cache behaviour."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from imagenet_suite.dataset.folder import DatasetFolder
from tests.helpers import REPO_ROOT, build_val, folder_bytes, load


def test_two_builds_and_num_proc_give_identical_bytes(val_layouts, tmp_path):
    first = build_val(val_layouts, "tar", tmp_path / "a", configs=("default", "boxes"), shard_size=4)
    second = build_val(val_layouts, "tar", tmp_path / "b", configs=("default", "boxes"), shard_size=4)
    parallel = build_val(val_layouts, "tar", tmp_path / "c", configs=("default", "boxes"), shard_size=4, num_proc=2)
    files = folder_bytes(first)
    assert len([f for f in files if f.endswith(".parquet")]) == 6
    assert files == folder_bytes(second) == folder_bytes(parallel)


def test_rebuild_in_place_is_a_noop_resume(val_layouts, tmp_path):
    folder = build_val(val_layouts, "tar", tmp_path, shard_size=5)
    before = {p: p.stat().st_mtime_ns for p in folder.rglob("*.parquet")}
    build_val(val_layouts, "tar", tmp_path, shard_size=5)
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*.parquet")} == before


def _slow_build(manual, out, delay: str) -> subprocess.Popen:
    args = [
        sys.executable,
        "-m",
        "tests.fixtures.slow_builder",
        "build",
        "slow_imagenet_val",
        "--out",
        str(out),
        "--manual-dir",
        str(manual),
        "--shard-size",
        "1",
        "--no-progress",
        "--num-proc",
        "1",
    ]
    return subprocess.Popen(
        args,
        cwd=REPO_ROOT,
        env={**os.environ, "SLOW_BUILDER_DELAY": delay, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_killed_build_resumes_to_identical_bytes(val_layouts, tmp_path):
    manual = val_layouts["kaggle"]
    reference = _slow_build(manual, tmp_path / "reference", "0")
    assert reference.wait(timeout=300) == 0, reference.stderr.read()
    folder_name = "slow_imagenet_val-1.0.0"

    victim = _slow_build(manual, tmp_path / "killed", "0.5")
    shard_dir = tmp_path / "killed" / folder_name / "default"
    deadline = time.time() + 240
    while len(list(shard_dir.glob("*.parquet"))) < 3:
        assert victim.poll() is None, "the build finished before it could be killed"
        assert time.time() < deadline
        time.sleep(0.05)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    finished = {p.name: p.stat().st_mtime_ns for p in shard_dir.glob("*.parquet")}
    assert 3 <= len(finished) < 12
    assert not (tmp_path / "killed" / folder_name / "build_info.json").exists()

    resumed = _slow_build(manual, tmp_path / "killed", "0")
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()
    assert resumed.stdout.read().strip().splitlines()[-1] == str((tmp_path / "killed" / folder_name).resolve())
    assert {
        n: m for n, m in ((p.name, p.stat().st_mtime_ns) for p in shard_dir.glob("*.parquet")) if n in finished
    } == finished
    assert folder_bytes(tmp_path / "killed" / folder_name) == folder_bytes(tmp_path / "reference" / folder_name)


def test_adding_a_config_later_keeps_the_first(val_layouts, tmp_path):
    build_val(val_layouts, "kaggle", tmp_path, configs=("boxes",))
    folder = build_val(val_layouts, "kaggle", tmp_path, configs=("default",))
    assert DatasetFolder(folder).configs == ["default", "boxes"]
    card = (folder / "README.md").read_text()
    assert "config_name: default" in card and "config_name: boxes" in card


def test_same_named_folders_never_share_an_hf_cache(val_layouts, val_images, tmp_path):
    """Pitfall: datasets caches local folders by basename+config+version; our card's content hash prevents it."""
    from tests.fixtures import imagenet_layouts as fx

    cache = tmp_path / "hf-cache"
    first = build_val(val_layouts, "folders", tmp_path / "one")
    fewer = fx.write_folders_layout(tmp_path / "fewer-src", val_images[:7])
    second = build_val({"f": fewer}, "f", tmp_path / "two")
    assert first.name == second.name
    assert load(first, "default", cache_dir=cache).num_rows == 12
    assert load(second, "default", cache_dir=cache).num_rows == 7
    # rebuilt in place with different data: not served stale
    import shutil

    shutil.rmtree(first)
    build_val({"f": fewer}, "f", tmp_path / "one")
    assert load(first, "default", cache_dir=cache).num_rows == 7


def test_card_declares_configs_versions_and_split_sizes(val_layouts, tmp_path):
    import yaml

    folder = build_val(val_layouts, "tar", tmp_path, configs=("default", "boxes"))
    text = (folder / "README.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert [c["config_name"] for c in meta["configs"]] == ["default", "boxes"]
    assert all(c["version"] == "1.0.0" for c in meta["configs"])
    assert meta["configs"][0]["default"] is True
    assert {(i["config_name"], s["name"], s["num_examples"]) for i in meta["dataset_info"] for s in i["splits"]} == {
        ("default", "validation", 12),
        ("boxes", "validation", 12),
    }
    assert "# ImageNet-1k validation" in text and "made from the `tar` layout" in text
    assert not list(folder.rglob("*.py"))  # a <dirname>.py would make load_dataset refuse the folder


def test_row_groups_are_small_for_images(val_layouts, tmp_path):
    import pyarrow.parquet as pq

    folder = build_val(val_layouts, "tar", tmp_path, shard_size=12)
    meta = pq.read_metadata(next((folder / "default").glob("*.parquet")))
    assert meta.num_row_groups == 1 and meta.row_group(0).num_rows == 12
    from imagenet_suite.builders.imagenet_val import ImagenetVal

    assert ImagenetVal.CONFIGS[0].row_group_rows == 100


@pytest.mark.parametrize("flag", ["--num-proc", "--shard-size"])
def test_bad_numeric_arguments_are_clear_errors(flag, val_layouts, tmp_path):
    from tests.helpers import run_cli

    result = run_cli(
        "build",
        "imagenet_val",
        "--out",
        str(tmp_path),
        "--manual-dir",
        str(val_layouts["folders"]),
        flag,
        "0",
        check=False,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "must be ≥ 1" in result.stderr


def _with_bomb(val_images, index: int):
    """The images with ``index``'s JPEG header claiming 10000 x 10000 pixels (over the default bound)."""
    from tests.fixtures import imagenet_layouts as fx

    image = val_images[index]
    data = bytearray(image.data)
    frame = data.find(b"\xff\xc0")
    data[frame + 5 : frame + 9] = (10000).to_bytes(2, "big") * 2
    return [
        *val_images[:index],
        fx.ValImage(image.image_id, bytes(data), image.label, image.boxes),
        *val_images[index + 1 :],
    ]


def _tree(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@pytest.mark.parametrize("out_exists", [False, True], ids=["new --out", "existing --out"])
def test_a_refused_build_leaves_no_folder_it_created(val_layouts, tmp_path, out_exists):
    from imagenet_suite.errors import InvalidSourceData

    out = tmp_path / "out"
    if out_exists:
        out.mkdir()
        (out / "unrelated.txt").write_text("kept")
    with pytest.raises(InvalidSourceData, match=r"ILSVRC2012_val_00000001.JPEG: \d+x\d+ = [\d,]+ pixels"):
        build_val(val_layouts, "tar", out / "deeper", max_pixels=100)
    assert not (out / "deeper").exists()  # nor imagenet_val-1.0.0/default/ in it
    with pytest.raises(InvalidSourceData, match=r"more than the bound of 100"):
        build_val(val_layouts, "tar", out, configs=("default", "boxes"), max_pixels=100)
    assert _tree(tmp_path) == (["out", "out/unrelated.txt"] if out_exists else [])  # --out too, if the run made it


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")  # the fixture writer reads the size
def test_a_refused_build_keeps_the_finished_shards_and_folders_that_were_there(val_images, tmp_path):
    from imagenet_suite.errors import InvalidSourceData
    from tests.fixtures import imagenet_layouts as fx

    manual = fx.write_kaggle_layout(tmp_path / "manual", _with_bomb(val_images, 5))
    out = tmp_path / "out"
    with pytest.raises(InvalidSourceData, match=r"ILSVRC2012_val_00000006.JPEG: 10000x10000"):
        build_val({"f": manual}, "f", out, shard_size=1)
    folder = out / "imagenet_val-1.0.0"
    finished = sorted(p.name for p in (folder / "default").iterdir())
    assert finished == [f"validation-{i:05d}-of-00012.parquet" for i in range(5)]  # resumable: kept
    assert (folder / ".build_journal.jsonl").exists()

    # an earlier, finished build: a failing build of another config leaves it as it was
    earlier = build_val({"f": manual}, "f", tmp_path / "earlier", max_pixels=None)
    before = folder_bytes(earlier)
    with pytest.raises(InvalidSourceData, match=r"ILSVRC2012_val_00000006.JPEG: 10000x10000"):
        build_val({"f": manual}, "f", tmp_path / "earlier", configs=("boxes",))
    assert folder_bytes(earlier) == before
    assert not (earlier / "boxes").exists()
