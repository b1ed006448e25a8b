"""imagenet_suite.files: the one atomic-write mechanism used by builds, caches and tables; the one text decoder
of release files (file:line errors); the check that files a list names stay inside their folder."""

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


# -- text: one decoder, file:line errors --------------------------------------------------------------------


def test_decode_text_names_the_line_and_column_of_the_first_bad_byte():
    from imagenet_suite.errors import HierarchyError, InvalidSourceData
    from imagenet_suite.files import decode_text

    assert decode_text("ID,Ünïcode\r\nx,y\n".encode(), "a.csv") == "ID,Ünïcode\r\nx,y\n"  # newlines kept for csv
    assert decode_text(b"\xef\xbb\xbfa\n", "a.csv") == "a\n"  # a spreadsheet's byte-order mark dropped
    with pytest.raises(
        InvalidSourceData, match=r"^a.csv:3: byte 0xe9 at column 4 is not UTF-8; expected a list, UTF-8"
    ):
        decode_text(b"ok\nok\ncaf\xe9\n\xff\n", "a.csv", "a list")
    with pytest.raises(InvalidSourceData, match=r"^a.csv:1: byte 0xff at column 2 "):
        decode_text(b"\xef\xbb\xbfa\xff", "a.csv")  # columns count from after the byte-order mark
    with pytest.raises(HierarchyError, match=r"^t.csv:1: byte 0xc3 at column 1 is not UTF-8"):
        decode_text(b"\xc3(", "t.csv", error=HierarchyError)  # a cut multi-byte sequence


def test_read_text_and_the_pins_file_name_the_file(tmp_path):
    from imagenet_suite.core.sources import read_pins_file
    from imagenet_suite.errors import InvalidSourceData, SourceError
    from imagenet_suite.files import read_text

    path = tmp_path / "checksums.tsv"
    path.write_bytes(b"# pins\nx.tar\t3\t" + b"0" * 64 + b"\n\xa0y.tar\t3\t" + b"0" * 64 + b"\n")
    with pytest.raises(InvalidSourceData, match=rf"^{path}:3: byte 0xa0 at column 1 is not UTF-8; expected text"):
        read_text(path)
    with pytest.raises(SourceError, match=rf"^{path}:3: byte 0xa0 at column 1 is not UTF-8; expected a checksums.tsv"):
        read_pins_file(path)


# -- files named by a list stay inside their folder ----------------------------------------------------------


def test_check_inside_refuses_links_and_folders_leading_out(tmp_path):
    from imagenet_suite.errors import SourceError
    from imagenet_suite.files import check_inside

    root, outside = tmp_path / "release", tmp_path / "outside"
    (root / "a").mkdir(parents=True)
    outside.mkdir()
    (root / "a" / "x.jpg").write_bytes(b"x")
    (outside / "y.jpg").write_bytes(b"y")
    (root / "a" / "inner.jpg").symlink_to(root / "a" / "x.jpg")  # stays inside: fine, as list_folder says
    (root / "a" / "out.jpg").symlink_to(outside / "y.jpg")
    (root / "b").symlink_to(outside)
    checked: set[str] = set()
    check_inside(root, ["a/x.jpg", "a/inner.jpg", "a/missing.jpg"], checked)
    assert checked == {str(root / "a")}
    with pytest.raises(SourceError, match=rf"a/out.jpg is a symlink to {outside / 'y.jpg'}, outside {root}: symlinks"):
        check_inside(root, ["a/out.jpg"], checked)
    with pytest.raises(SourceError, match=rf"{root / 'b'} leads to {outside}, outside {root}: symlinks leaving"):
        check_inside(root, ["b/y.jpg"])
