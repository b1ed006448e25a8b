"""Sources: pins, cache, resumable downloads over real HTTP (loopback), offline mode, local copies."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path

import pytest

from imagenet_suite.core.sources import Source, SourceResolver, read_pins_file
from imagenet_suite.errors import ChecksumMismatch, ManualFileMissing, SourceError

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB


class RangeHandler(http.server.BaseHTTPRequestHandler):
    """Serves PAYLOAD at any path, honouring 'Range: bytes=N-'; counts requests."""

    requests: list[str] = []

    def do_GET(self):
        RangeHandler.requests.append(self.headers.get("Range") or "")
        start = int(self.headers["Range"].split("=")[1].rstrip("-")) if self.headers.get("Range") else 0
        body = PAYLOAD[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(body)))
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(PAYLOAD) - 1}/{len(PAYLOAD)}")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    RangeHandler.requests = []
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), RangeHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _source(url: str, **kwargs) -> Source:
    return Source(
        "blob",
        "blob.bin",
        url=f"{url}/blob.bin",
        size=len(PAYLOAD),
        sha256=hashlib.sha256(PAYLOAD).hexdigest(),
        **kwargs,
    )


def test_download_verifies_and_caches(server, tmp_path):
    resolver = SourceResolver(cache_dir=tmp_path, offline=False)
    first = resolver.resolve(_source(server))
    assert first.path.read_bytes() == PAYLOAD and first.sha256 == hashlib.sha256(PAYLOAD).hexdigest()
    again = SourceResolver(cache_dir=tmp_path, offline=True).resolve(_source(server))
    assert again.path == first.path and RangeHandler.requests == [""]


def test_partial_download_resumes_from_part_file(server, tmp_path):
    resolver = SourceResolver(cache_dir=tmp_path, offline=False)
    source = _source(server)
    target = resolver._cache_path(source)
    target.parent.mkdir(parents=True)
    target.with_name("blob.bin.part").write_bytes(PAYLOAD[:300_000])
    resolved = resolver.resolve(source)
    assert RangeHandler.requests == ["bytes=300000-"]
    assert resolved.path.read_bytes() == PAYLOAD
    assert not target.with_name("blob.bin.part").exists()


def test_download_with_wrong_hash_is_refused(server, tmp_path):
    source = Source("blob", "blob.bin", url=f"{server}/blob.bin", sha256="ab" * 32)
    with pytest.raises(ChecksumMismatch, match=r"blob.bin: sha256 is [0-9a-f]{64}, expected (ab){32}"):
        SourceResolver(cache_dir=tmp_path, offline=False).resolve(source)


def test_offline_mode_never_downloads(server, tmp_path):
    with pytest.raises(SourceError, match="offline mode is on"):
        SourceResolver(cache_dir=tmp_path, offline=True).resolve(_source(server))
    assert RangeHandler.requests == []


def test_unreachable_url_says_what_to_do(tmp_path):
    source = Source("blob", "blob.bin", url="http://127.0.0.1:9/blob.bin")
    with pytest.raises(SourceError, match="cannot download .*put it in manual_dir"):
        SourceResolver(cache_dir=tmp_path, offline=False).resolve(source)


def test_wrong_size_is_named_before_hashing(tmp_path):
    (tmp_path / "blob.bin").write_bytes(PAYLOAD[:10])
    with pytest.raises(ChecksumMismatch, match="size is 10 bytes, expected 1048576"):
        SourceResolver(manual_dir=tmp_path).resolve(_source("http://unused"))


def test_manual_file_missing_carries_instructions(tmp_path):
    source = Source("tar", "ILSVRC2012_img_val.tar", instructions="Get it from image-net.org.")
    with pytest.raises(ManualFileMissing, match="'ILSVRC2012_img_val.tar' not found in .*Get it from image-net.org"):
        SourceResolver(manual_dir=tmp_path).resolve(source)


def test_local_copy_used_only_when_it_matches(tmp_path):
    good, bad = tmp_path / "good.bin", tmp_path / "bad.bin"
    good.write_bytes(PAYLOAD)
    bad.write_bytes(PAYLOAD[:-1] + b"x")
    base = _source("http://unused")
    with_bad = Source(**{**base.__dict__, "local_copies": (lambda: bad,)})
    with_good = Source(**{**base.__dict__, "local_copies": (lambda: bad, lambda: good)})
    assert SourceResolver(cache_dir=tmp_path / "c", offline=True).resolve(with_good).path == good
    with pytest.raises(SourceError, match="offline"):
        SourceResolver(cache_dir=tmp_path / "c", offline=True).resolve(with_bad)


def test_pins_file_overrides_and_rejects_malformed_lines(tmp_path):
    pins = tmp_path / "checksums.tsv"
    pins.write_text(f"blob.bin\t{len(PAYLOAD)}\t{hashlib.sha256(PAYLOAD).hexdigest()}\n")
    (tmp_path / "blob.bin").write_bytes(PAYLOAD)
    manual = Source("blob", "blob.bin", md5="0" * 32)  # a pin the override replaces
    assert SourceResolver(manual_dir=tmp_path, pins=read_pins_file(pins)).resolve(manual).size == len(PAYLOAD)
    pins.write_text("blob.bin\tbig\tabc\n")
    with pytest.raises(SourceError, match=r"checksums.tsv:1: expected"):
        read_pins_file(pins)


def test_cache_dir_from_environment(monkeypatch, tmp_path):
    from imagenet_suite.core.sources import default_cache_dir

    monkeypatch.setenv("IMAGENET_SUITE_CACHE", str(tmp_path / "x"))
    assert default_cache_dir() == Path(tmp_path / "x")


def test_resolve_with_reads_while_verifying_and_returns_only_verified_results(tmp_path):
    (tmp_path / "blob.bin").write_bytes(PAYLOAD)
    good = Source("blob", "blob.bin", size=len(PAYLOAD), sha256=hashlib.sha256(PAYLOAD).hexdigest())
    resolver = SourceResolver(manual_dir=tmp_path, cache_dir=tmp_path / "cache", offline=True)
    resolved, head = resolver.resolve_with(good, lambda path: path.read_bytes()[:4])
    assert head == PAYLOAD[:4] and resolved.sha256 == good.sha256 and resolved.path == tmp_path / "blob.bin"

    def broken_read(path):
        raise ValueError(f"cannot parse {path}")

    with pytest.raises(ValueError, match="cannot parse"):  # a right file: the read's own error
        resolver.resolve_with(good, broken_read)
    wrong = Source("blob", "blob.bin", size=len(PAYLOAD), sha256="0" * 64)
    for read in (lambda path: "parsed", broken_read):  # a wrong file: the checksum error, whatever the read did
        with pytest.raises(ChecksumMismatch, match="blob.bin: sha256 is"):
            SourceResolver(manual_dir=tmp_path, cache_dir=tmp_path / "cache", offline=True).resolve_with(wrong, read)


def test_deferred_verification_checks_size_at_once_and_hash_on_wait(tmp_path):
    (tmp_path / "blob.bin").write_bytes(PAYLOAD)
    pinned = Source("blob", "blob.bin", size=len(PAYLOAD), sha256=hashlib.sha256(PAYLOAD).hexdigest())
    resolver = SourceResolver(manual_dir=tmp_path, cache_dir=tmp_path / "cache", offline=True, defer_verification=True)
    assert resolver.resolve(pinned).sha256 == pinned.sha256
    resolver.wait_verified()  # passes
    wrong_hash = Source("blob", "blob.bin", size=len(PAYLOAD), sha256="0" * 64)
    deferred = SourceResolver(manual_dir=tmp_path, cache_dir=tmp_path / "cache", offline=True, defer_verification=True)
    assert deferred.resolve(wrong_hash).sha256 == "0" * 64  # returned before the hash is known ...
    for _ in range(2):  # ... and the failure is raised by every wait until the build gives up
        with pytest.raises(ChecksumMismatch, match="blob.bin: sha256 is"):
            deferred.wait_verified()
    with pytest.raises(ChecksumMismatch, match="size is"):  # sizes are checked at once
        deferred.resolve(Source("blob", "blob.bin", size=3, sha256="0" * 64))
    unpinned = deferred.resolve(Source("blob", "blob.bin"))  # no sha256 pin: hashed at once, to record it
    assert unpinned.sha256 == hashlib.sha256(PAYLOAD).hexdigest()


def test_deferred_verification_never_takes_a_wrong_local_copy(tmp_path):
    copy = tmp_path / "copy.bin"
    copy.write_bytes(PAYLOAD[:-1] + b"!")
    source = Source(
        "blob",
        "blob.bin",
        url="http://127.0.0.1:9/blob.bin",
        size=len(PAYLOAD),
        sha256=hashlib.sha256(PAYLOAD).hexdigest(),
        local_copies=(lambda: copy,),
    )
    resolver = SourceResolver(cache_dir=tmp_path / "cache", offline=True, defer_verification=True)
    with pytest.raises(SourceError, match="offline mode is on"):
        resolver.resolve(source)


def test_md5_and_sha256_together_match_hashlib(tmp_path):
    from imagenet_suite.core.sources import file_digests

    path = tmp_path / "big.bin"
    path.write_bytes(PAYLOAD * 20)  # 20 MiB: several read chunks
    digests = file_digests(path, ("sha256", "md5"), progress=False)
    assert digests == {"sha256": hashlib.sha256(PAYLOAD * 20).hexdigest(), "md5": hashlib.md5(PAYLOAD * 20).hexdigest()}
