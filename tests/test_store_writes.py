"""A write that fails for lack of space names its file and what to change (issue 40: a full disk under
``--prediction-store`` said "choose another --out; finished shards are kept", naming no file and the wrong flag).

The disk is full where the kernel says so: ``open`` works, ``write`` raises ``OSError(ENOSPC)`` with no file
name (``imagenet_suite.files`` writes through its module-level ``open``, which the tests replace for the paths
under one folder). Each command runs in this process: exit code 2, one stderr line, and the store keeps what
it holds (no half-written file), so the run after the space is freed succeeds.
"""

from __future__ import annotations

import builtins
import errno
import os
import re
from pathlib import Path

import pytest

from imagenet_suite import files
from imagenet_suite.files import atomic_write_bytes
from imagenet_suite.testing import tiny_val_build
from tests.helpers import one_line

NO_SPACE = os.strerror(errno.ENOSPC)


class _FullDiskFile:
    """A file opened for writing on a full disk: every ``write`` fails as the kernel's does (no file name)."""

    def __init__(self, handle):
        self._handle = handle

    def write(self, data):
        raise OSError(errno.ENOSPC, NO_SPACE)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()

    def __getattr__(self, name):
        return getattr(self._handle, name)


def full_disk(monkeypatch, where: str) -> None:
    """From now on, files written by ``imagenet_suite.files`` whose path contains ``where`` hit a full disk."""

    def opened(file, mode="r", *args, **kwargs):
        handle = builtins.open(file, mode, *args, **kwargs)  # noqa: SIM115 (the caller closes it)
        return _FullDiskFile(handle) if "w" in mode and where in os.fsdecode(file) else handle

    monkeypatch.setattr(files, "open", opened, raising=False)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return tiny_val_build(tmp_path_factory.mktemp("tiny"))


def _predict(folder: Path, out: Path, *extra: str) -> list[str]:
    return ["predict", str(folder), "--model", "timm:test_resnet", "--weights", "none", "--out", str(out),
            "--device", "cpu", "--workers", "0", "--no-progress", *extra]  # fmt: skip


def _incomplete(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.name.endswith(files.INCOMPLETE)]


def test_a_failed_atomic_write_names_its_file_and_leaves_nothing_behind(tmp_path, monkeypatch):
    full_disk(monkeypatch, str(tmp_path))
    with pytest.raises(OSError) as failed:
        atomic_write_bytes(tmp_path / "x.bin", b"data")
    assert (failed.value.errno, failed.value.filename, failed.value.strerror) == (
        errno.ENOSPC,
        str(tmp_path / "x.bin"),
        NO_SPACE,
    )
    assert list(tmp_path.iterdir()) == []


def test_disk_full_in_the_prediction_store_names_the_file_and_the_flag(tiny, tmp_path, monkeypatch, capsys):
    from imagenet_suite import cli

    store = tmp_path / "store"
    full_disk(monkeypatch, f"{os.sep}chunks{os.sep}")  # the batches: where a store grows
    line = one_line(capsys, _predict(tiny, tmp_path / "out.pt", "--prediction-store", str(store)))
    chunk = re.escape(str(store)) + r"/[0-9a-f]{64}/chunks/[0-9a-f]{64}\.pt"
    assert re.fullmatch(
        rf"imagenet-suite predict: error: --prediction-store {re.escape(str(store))}: cannot write {chunk}: "
        rf"{NO_SPACE} \(free space there or choose another --prediction-store; the predictions it holds are kept "
        r"and reused by the next run\)",
        line,
    ), line
    assert _incomplete(store) == [] and not (tmp_path / "out.pt").exists()
    monkeypatch.undo()  # space freed: the same run finishes
    assert cli.main(_predict(tiny, tmp_path / "out.pt", "--prediction-store", str(store))) == 0
    assert (tmp_path / "out.pt").is_file()


def test_disk_full_in_a_run_folders_own_store_names_out(tiny, tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    full_disk(monkeypatch, f"{os.sep}chunks{os.sep}")
    argv = ["evaluate", "--model", "timm:test_resnet", "--weights", "none", "--datasets", str(tiny), "--out",
            str(run), "--device", "cpu", "--workers", "0", "--bootstrap", "0", "--no-progress"]  # fmt: skip
    line = one_line(capsys, argv)
    store = re.escape(str(run / "predictions"))
    assert re.fullmatch(
        rf"imagenet-suite evaluate: error: --out {store}: cannot write {store}/\S+\.pt: {NO_SPACE} \(free space "
        r"there or choose another --out; the predictions it holds are kept and reused by the next run\)",
        line,
    ), line


def test_disk_full_elsewhere_names_the_file_without_the_advice_of_a_build(tiny, tmp_path, monkeypatch, capsys):
    """Without a store, predict keeps its batches in ``<out>.partial/``: the line names the batch's file; the
    advice of ``build`` (its finished shards, ``--out``) is not given."""
    full_disk(monkeypatch, str(tmp_path))
    line = one_line(capsys, _predict(tiny, tmp_path / "out.pt"))
    partial = re.escape(str(tmp_path / "out.pt.partial"))
    assert re.fullmatch(
        rf"imagenet-suite predict: error: {partial}/\S+: {NO_SPACE} \(disk full: free space there, or write elsewhere\)",
        line,
    ), line
