"""The one atomic-write mechanism (``imagenet_suite.files.atomic_write_bytes``) used by builds, caches and tables."""

from __future__ import annotations

import threading

import pytest

from imagenet_suite.files import atomic_write_bytes


def test_replaces_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "table.csv"
    path.write_bytes(b"old")
    atomic_write_bytes(path, b"new")
    assert path.read_bytes() == b"new" and sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


@pytest.mark.parametrize("own_temp_file", [False, True])
def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path, own_temp_file):
    path = tmp_path / "table.csv"
    path.write_bytes(b"old")
    with pytest.raises(TypeError):
        atomic_write_bytes(path, "not bytes", shared=own_temp_file)  # fails inside write(), after the temp file exists
    assert path.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["table.csv"]


def test_shared_writers_of_one_path_never_collide(tmp_path):
    """Threads filling the same cache entry: every write succeeds, the file is one writer's whole bytes."""
    path = tmp_path / "image.jpg"
    payloads = [bytes([i]) * 200_000 for i in range(8)]
    errors: list[BaseException] = []

    def write(data: bytes) -> None:
        try:
            for _ in range(20):
                atomic_write_bytes(path, data, durable=False, shared=True)
        except BaseException as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=write, args=(data,)) for data in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert path.read_bytes() in payloads
    assert sorted(p.name for p in tmp_path.iterdir()) == ["image.jpg"]
