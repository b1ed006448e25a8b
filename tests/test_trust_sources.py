"""Sources stay verified: folders by content, downloads by size and hash, URLs pinned, symlinks refused.

Downloads run against a real HTTP server on loopback whose misbehaviour each test chooses.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import re
import threading
from pathlib import Path

import pytest

from imagenet_suite.builders.imagenet_real import REAL_JSON
from imagenet_suite.core import registry
from imagenet_suite.core.sources import REJECTED, Source, SourceResolver, read_pins_file
from imagenet_suite.errors import ChecksumMismatch, SourceError
from imagenet_suite.files import folder_content_sha256, list_folder
from tests.fixtures import imagenet_layouts as fx
from tests.helpers import build_val, folder_bytes

PAYLOAD = bytes(range(256)) * 2048  # 512 KiB
OTHER = bytes(reversed(PAYLOAD))  # same size, other bytes


class Misbehaving(http.server.BaseHTTPRequestHandler):
    """Serves ``body`` announcing ``announced`` bytes (Content-Length) and sending ``sent`` of them."""

    body: bytes = PAYLOAD
    announced: int | None = None  # None: len(body)
    sent: int | None = None  # None: all
    requests: list[str] = []

    def do_GET(self):
        Misbehaving.requests.append(self.path)
        self.send_response(200)
        self.send_header("Content-Length", str(self.announced if self.announced is not None else len(self.body)))
        self.end_headers()
        self.wfile.write(self.body[: self.sent])
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    Misbehaving.body, Misbehaving.announced, Misbehaving.sent, Misbehaving.requests = PAYLOAD, None, None, []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Misbehaving)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def pinned(url: str) -> Source:
    return Source(
        "blob", "blob.bin", url=f"{url}/blob.bin", size=len(PAYLOAD), sha256=hashlib.sha256(PAYLOAD).hexdigest()
    )


def cached_files(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.rglob("*") if p.is_file())


# -- downloads -----------------------------------------------------------------------------------------


def test_a_download_cut_short_is_moved_aside_and_downloaded_again(server, tmp_path):
    Misbehaving.sent = len(PAYLOAD) // 3  # the connection closes after a third of Content-Length
    resolver = SourceResolver(cache_dir=tmp_path, offline=False, progress=False)
    with pytest.raises(
        SourceError,
        match=rf"received {len(PAYLOAD) // 3} of the {len(PAYLOAD)} bytes the server "
        rf"announced .*Moved it aside to .*blob.bin.part{REJECTED}",
    ):
        resolver.resolve(pinned(server))
    assert cached_files(tmp_path) == [f"blob.bin.part{REJECTED}"]  # nothing renamed into the cache

    Misbehaving.sent = None
    resolved = SourceResolver(cache_dir=tmp_path, offline=False, progress=False).resolve(pinned(server))
    assert resolved.path.read_bytes() == PAYLOAD and len(Misbehaving.requests) == 2


def test_a_download_of_the_wrong_size_is_refused_before_the_rename(server, tmp_path):
    Misbehaving.body = PAYLOAD + b"extra"  # the server is consistent, the file is not the pinned one
    with pytest.raises(SourceError, match=rf"the file has {len(PAYLOAD) + 5} bytes, its pinned size is {len(PAYLOAD)}"):
        SourceResolver(cache_dir=tmp_path, offline=False, progress=False).resolve(pinned(server))
    assert cached_files(tmp_path) == [f"blob.bin.part{REJECTED}"]


@pytest.mark.parametrize("deferred", [False, True])
def test_a_cached_file_with_a_wrong_checksum_is_moved_aside_and_fetched_again(server, tmp_path, deferred):
    source = pinned(server)
    first = SourceResolver(cache_dir=tmp_path, offline=False, progress=False).resolve(source)
    first.path.write_bytes(OTHER)  # rots in the cache, same size
    resolver = SourceResolver(cache_dir=tmp_path, offline=False, progress=False, defer_verification=deferred)
    with pytest.raises(
        ChecksumMismatch, match=rf"moved aside to .*blob.bin{REJECTED}: the next run downloads it again"
    ):
        resolver.resolve(source)
        resolver.wait_verified()
    assert not first.path.exists() and first.path.with_name(f"blob.bin{REJECTED}").read_bytes() == OTHER

    again = SourceResolver(cache_dir=tmp_path, offline=False, progress=False).resolve(source)
    assert again.path.read_bytes() == PAYLOAD and len(Misbehaving.requests) == 2


@pytest.mark.parametrize("rot", ["same size", "truncated"])
def test_a_bad_cached_real_json_falls_back_to_the_copy_timm_ships(tmp_path, rot):
    resolver = SourceResolver(cache_dir=tmp_path, offline=True, progress=False)
    cached = resolver._cache_path(REAL_JSON)
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"[" + b" " * (REAL_JSON.size - 2) + b"]" if rot == "same size" else b"[[1]]")
    resolved = resolver.resolve(REAL_JSON)
    assert resolved.path != cached and resolved.sha256 == REAL_JSON.sha256  # timm's copy, verified
    assert not cached.exists() and cached.with_name(cached.name + REJECTED).exists()


# -- pins -----------------------------------------------------------------------------------------------


def test_pins_must_be_hex_digests(tmp_path):
    with pytest.raises(ValueError, match="sha256 pin .* is not 64 hex digits"):
        Source("x", "x.bin", sha256="z" * 64)
    with pytest.raises(ValueError, match="md5 pin .* is not 32 hex digits"):
        Source("x", "x.bin", md5="0" * 31)
    pins = tmp_path / "checksums.tsv"
    pins.write_text(f"good.bin\t3\t{'a' * 64}\nbad.bin\t3\t{'g' * 64}\n")
    with pytest.raises(SourceError, match=r"checksums.tsv:2: expected .*sha256, 64 hex digits"):
        read_pins_file(pins)
    pins.write_text(f"a.bin\t3\t{'a' * 64}\na.bin\t3\t{'b' * 64}\n")
    with pytest.raises(SourceError, match=r"checksums.tsv:2: a.bin is pinned twice"):
        read_pins_file(pins)
    with pytest.raises(SourceError, match=r"^pins .*missing.tsv: no such file"):
        read_pins_file(tmp_path / "missing.tsv")


# Sources whose URL cannot name an immutable revision and whose publishers give no hash: the first
# build records the sha256 (build_info.json, card) and `--pins` pins it from then on.
UNPINNABLE = {
    "imagenet-o.tar": "a personal web server with no revisions; no published hash (TFDS has no imagenet_o)",
    "cue-conflict.tar.gz": "model-vs-human v0.1 release asset; no published hash",
    "edge.tar.gz": "model-vs-human v0.1 release asset; no published hash",
    "silhouette.tar.gz": "model-vs-human v0.1 release asset; no published hash",
    "sketch.tar.gz": "model-vs-human v0.1 release asset; no published hash",
    "stylized.tar.gz": "model-vs-human v0.1 release asset; no published hash",
    "backgrounds_challenge_data.tar.gz": "MadryLab/backgrounds_challenge 'data' release asset; no published hash",
    "iNaturalist.tar.gz": "MOS (Huang & Li 2021) on a personal university web page; no published hash",
    "SUN.tar.gz": "MOS (Huang & Li 2021) on a personal university web page; no published hash",
    "Places.tar.gz": "MOS (Huang & Li 2021) on a personal university web page; no published hash",
}
IMMUTABLE_URL = re.compile(r"/[0-9a-f]{40}[/.]|zenodo\.org/records?/\d+/")  # a git commit, or a Zenodo record


def test_every_download_url_is_pinned_to_an_immutable_revision_or_a_hash():
    seen = {}
    for name, builder in registry.all_builders().items():
        for source in builder.SOURCES:
            if source.url is None:
                continue
            seen[source.filename] = name
            assert "/master/" not in source.url and not (source.url.count("/main/") and not source.sha256), source.url
            if source.filename in UNPINNABLE:
                continue
            assert IMMUTABLE_URL.search(source.url) or source.sha256, (
                f"{name}: {source.url} is neither a revision nor pinned"
            )
    assert set(UNPINNABLE) <= set(seen), "the exceptions above must name real sources"
    assert "/25ae4854f875bbae6782fd9ea4a18654f6c89c6c/" in REAL_JSON.url  # google-research/reassessed-imagenet


# -- folder sources ---------------------------------------------------------------------------------------


def flip_scan_byte(path: Path) -> None:
    """Change one byte inside a JPEG's compressed data: same size, structure intact, other pixels."""
    data = bytearray(path.read_bytes())
    position = len(data) - 20
    data[position] = (data[position] + 1) % 255  # never 0xFF: no marker is created
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("layout", ["folders", "kaggle"])
def test_a_changed_image_in_a_folder_source_changes_its_hash_and_invalidates_resume(val_images, tmp_path, layout):
    writer = {"folders": fx.write_folders_layout, "kaggle": fx.write_kaggle_layout}[layout]
    manual = writer(tmp_path / "manual", val_images)
    folder = build_val({layout: manual}, layout, tmp_path / "out", shard_size=4)
    before = json.loads((folder / "build_info.json").read_text())["configs"]["default"]["sources"]["images"]
    assert before["kind"] == "folder"

    image = next(manual.rglob(f"{val_images[6].file_name}"))
    flip_scan_byte(image)
    build_val({layout: manual}, layout, tmp_path / "out", shard_size=4)
    after = json.loads((folder / "build_info.json").read_text())["configs"]["default"]["sources"]["images"]

    assert after["size"] == before["size"] and after["sha256"] != before["sha256"]
    root = image.parent.parent if layout == "folders" else image.parent
    assert after["sha256"] == folder_content_sha256(root, list_folder(root))
    fresh = build_val({layout: manual}, layout, tmp_path / "fresh", shard_size=4)
    assert folder_bytes(folder) == folder_bytes(fresh)  # the shard holding the old bytes was rebuilt


def test_folder_hashing_runs_in_the_background_and_settles_to_the_content_hash(val_images, tmp_path):
    manual = fx.write_folders_layout(tmp_path / "manual", val_images)
    resolver = SourceResolver(manual_dir=manual, defer_verification=True, progress=False)
    resolved = resolver.resolve_folder("val_images", manual / "val")
    assert resolved.sha256 is None and resolved.listing is not None  # known: names and sizes; hashing: later
    settled = resolver.settle({"images": resolved})["images"]
    assert settled.sha256 == folder_content_sha256(manual / "val", list_folder(manual / "val"))
    assert settled.identity == resolved.identity == resolved.listing


def test_a_big_folder_is_hashed_in_a_child_process_to_the_same_digest(tmp_path):
    from imagenet_suite.core import sources

    root = tmp_path / "big"
    for i in range(
        sources.PROCESS_HASHING_MIN_FILES + 1
    ):  # over the threshold: hashed by `python -m imagenet_suite.files`
        folder = root / f"{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i}.bin").write_bytes(i.to_bytes(4, "big") * (i % 5 + 1))
    resolver = SourceResolver(defer_verification=True, progress=False)
    settled = resolver.settle({"big": resolver.resolve_folder("big", root)})["big"]
    assert settled.sha256 == folder_content_sha256(root, list_folder(root))


def test_the_child_process_names_a_file_it_cannot_read(tmp_path):
    from imagenet_suite.core import sources

    (tmp_path / "here.bin").write_bytes(b"x")
    with pytest.raises(SourceError, match=r"hashing the folder failed: .*gone.bin: No such file"):
        sources._hash_folder_in_a_process(tmp_path, ["gone.bin", "here.bin"], progress=False)


# -- symlinks -----------------------------------------------------------------------------------------------


def test_a_symlink_leaving_the_manual_folder_is_refused(val_images, tmp_path):
    manual = fx.write_folders_layout(tmp_path / "manual", val_images)
    outside = tmp_path / "elsewhere" / val_images[3].file_name
    outside.parent.mkdir()
    image = next(manual.rglob(val_images[3].file_name))
    outside.write_bytes(image.read_bytes())
    image.unlink()
    image.symlink_to(outside)
    with pytest.raises(
        SourceError, match=rf"{re.escape(str(image))} is a symlink to {re.escape(str(outside))}, outside"
    ):
        build_val({"folders": manual}, "folders", tmp_path / "out")


def test_a_manual_file_linked_from_outside_is_refused_and_links_inside_are_kept(val_images, tmp_path):
    manual = fx.write_tar_layout(tmp_path / "manual", val_images)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    tar = manual / "ILSVRC2012_img_val.tar"
    tar.rename(elsewhere / tar.name)
    tar.symlink_to(elsewhere / tar.name)
    with pytest.raises(SourceError, match=r"ILSVRC2012_img_val.tar leads to .*elsewhere.*outside manual_dir"):
        build_val({"tar": manual}, "tar", tmp_path / "out")

    tar.unlink()
    (manual / "store").mkdir()
    (elsewhere / tar.name).rename(manual / "store" / tar.name)
    tar.symlink_to(manual / "store" / tar.name)  # inside the manual folder: fine
    assert (build_val({"tar": manual}, "tar", tmp_path / "out") / "build_info.json").exists()
