"""Outputs stay verified: a rebuild never keeps or blesses a shard whose bytes changed, and a model's
outputs, features, detector statistics or weights are read only after their headers were checked.

A finished shard is kept only if its sha256 equals the hash recorded when it was written (in the
build journal of an interrupted run, or in build_info.json of a finished one); anything else is
rebuilt, and the folder ends byte-identical to a fresh build. build_info.json is never rewritten to
match a changed file, and a corrupt build_info.json stops the build with one line.

Files of tensors (outputs ``.npz``/``.pt``, ``Embeddings``, ``DetectorStats``, ``--weights``): shapes and
dtypes come from the ``.npy`` headers / the torch file's metadata (``mmap``) and are checked against
each other and against what the caller expects before any data is decompressed or copied; a pickle of
other Python objects, a truncated file or a missing/mis-shaped entry is one line naming the file.
"""

from __future__ import annotations

import io
import json
import os
import re
import struct
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import imagenet_suite.core.runner as runner
from imagenet_suite.core.runner import JOURNAL
from imagenet_suite.dataset.verify import verify_folder
from imagenet_suite.errors import ConfigError, DatasetFolderError, OutputsError
from imagenet_suite.scoring.metrics.ood_detector_fit import fit_detector_stats
from imagenet_suite.scoring.metrics.ood_detector_stats import (
    CONTENT_SHA256,
    DetectorStats,
    Embeddings,
    stats_content_sha256,
)
from imagenet_suite.scoring.metrics.ood_fit import FitSet
from imagenet_suite.scoring.outputs import ModelOutputs
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
    with pytest.raises(DatasetFolderError, match=r"sha256 [0-9a-f]{64}, build_info.json says [0-9a-f]{64}"):
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
    with pytest.raises(
        DatasetFolderError, match=r"boxes/validation-00000-of-00002.parquet: sha256 [0-9a-f]{64}, build_info.json says"
    ):
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


# -- files of tensors: outputs, features, detector statistics, weights -----------------------------------

IDS = [f"row{i:02d}" for i in range(12)]
BIG = 2_000_000  # x 12 rows x 4 bytes: 96 MB of float32 zeros, deflated to ~100 KB
ALLOWED = 32 << 20  # what reading the headers and refusing may allocate


def zeros_npz(path: Path, shape: tuple[int, int], ids=IDS, name: str = "logits") -> Path:
    """A deflated .npz of ``ids`` and a float32 array of zeros of ``shape`` (tiny on disk)."""
    np.savez_compressed(path, ids=np.asarray(ids), **{name: np.zeros(shape, np.float32)})
    return path


def forged_npz(path: Path, shape: tuple[int, int]) -> Path:
    """An .npz whose logits header declares ``shape`` and whose zip directory claims the matching size,
    though the member holds a few KB of deflated zeros (a lie no deflate stream of that length can keep)."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("ids.npy", _npy(np.asarray(IDS)))
        archive.writestr("logits.npy", header.getvalue() + bytes(4096))
    claimed = len(header.getvalue()) + 4 * shape[0] * shape[1]
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        struct.pack_into("<I", data, archive.getinfo("logits.npy").header_offset + 22, claimed)
    start = data.find(b"PK\x01\x02")
    while start >= 0:  # the central directory entry of logits.npy
        name_length = struct.unpack_from("<H", data, start + 28)[0]
        if data[start + 46 : start + 46 + name_length] == b"logits.npy":
            struct.pack_into("<I", data, start + 24, claimed)
        start = data.find(b"PK\x01\x02", start + 4)
    path.write_bytes(bytes(data))
    return path


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def allocated_while(action) -> int:
    """Bytes ``action()`` allocated at its peak: numpy/Python allocations (tracemalloc, which also counts
    memory not yet touched) and the growth of the resident set (torch's allocator, mmap reads)."""
    rss_reset = _reset_peak_rss()
    before = _status("VmRSS") if rss_reset else 0
    tracemalloc.start()
    try:
        action()
    finally:
        _, traced = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    grown = (_status("VmHWM") - before) if rss_reset else 0
    return max(traced, grown)


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as handle:  # "5": reset VmHWM to the current RSS
            handle.write("5")
        return True
    except OSError:
        return False


def _status(field: str) -> int:
    with open("/proc/self/status") as handle:
        return int(re.search(rf"{field}:\s+(\d+) kB", handle.read()).group(1)) * 1024


def refused(action, error=OutputsError) -> str:
    """The one-line message ``action()`` is refused with (and how much it allocated on the way)."""
    found = []

    def attempt():
        with pytest.raises(error) as caught:
            action()
        found.append(str(caught.value))

    used = allocated_while(attempt)
    assert len(found[0].splitlines()) == 1, found[0]
    assert used < ALLOWED, f"allocated {used:,} bytes before refusing: {found[0]}"
    return found[0]


@pytest.mark.parametrize(
    ("shape", "expect", "message"),
    [
        ((12, BIG), {"num_classes": 1000}, r"logits.npy' holds 2000000 scores per row, expected 1000 \(the classes"),
        ((12, BIG), {"num_rows": 10}, r"logits.npy' holds 12 rows, expected 10 \(the rows"),
        ((BIG * 12 // 8, 8), {}, r"logits.npy' holds 3000000 rows but 'ids.npy' holds 12 ids"),
    ],
)
def test_npz_shapes_are_checked_from_the_headers_before_anything_is_decompressed(tmp_path, shape, expect, message):
    path = zeros_npz(tmp_path / "big.npz", shape)
    assert path.stat().st_size < 1 << 20
    assert re.search(f"big.npz: .*{message}", refused(lambda: ModelOutputs.load(path, **expect)))


def test_a_zip_directory_claiming_more_than_its_deflate_stream_can_hold_is_refused_before_allocating(tmp_path):
    path = forged_npz(tmp_path / "forged.npz", (12, 50_000_000))  # claims 2.4 GB from ~4 KB of deflate
    message = refused(lambda: ModelOutputs.load(path))
    assert re.search(r"forged.npz: member 'logits.npy' claims 2,400,000,\d+ bytes from \d+ compressed", message)


def test_npz_features_are_checked_from_the_headers(tmp_path):
    rows = zeros_npz(tmp_path / "rows.npz", (BIG * 12 // 8, 8), name="features")
    assert "holds 3000000 rows but 'ids.npy' holds 12 ids" in refused(lambda: Embeddings.load(rows))
    whole = zeros_npz(tmp_path / "ok.npz", (12, 8), name="features")
    assert Embeddings.load(whole).values.shape == (12, 8)


def test_pt_outputs_are_checked_from_the_tensor_metadata_before_the_data_is_read(tmp_path):
    path = tmp_path / "big.pt"
    torch.save({"ids": IDS, "logits": torch.zeros(12, BIG)}, path)
    message = refused(lambda: ModelOutputs.load(path, num_classes=1000))
    assert "big.pt: 'logits' holds 2000000 scores per row, expected 1000" in message
    torch.save({"ids": IDS[:5], "logits": torch.zeros(12, 1000)}, path)
    assert "'logits' holds 12 rows but 'ids' holds 5 ids" in refused(lambda: ModelOutputs.load(path))
    torch.save({"ids": IDS, "logits": torch.arange(12 * 7, dtype=torch.float32).reshape(12, 7)}, path)
    loaded = ModelOutputs.load(path, num_rows=12, num_classes=7)
    path.write_bytes(b"")  # what was read is a copy, not a view of the file
    assert loaded.values[11, 6] == 83 and loaded.ids == tuple(IDS)


class Payload:
    """Pickles as a call of os.system: weights_only loading must refuse it, and never run it."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def pickled(path: Path, entries: dict) -> Path:
    torch.save({**entries, "payload": Payload(path.with_suffix(".ran"))}, path)
    return path


def _stats() -> DetectorStats:
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(40, 5, dtype=torch.float64, generator=generator)
    labels = torch.arange(40) % 4
    weight, bias = torch.randn(4, 5, dtype=torch.float64, generator=generator), torch.zeros(4, dtype=torch.float64)
    return fit_detector_stats(FitSet(features, labels, features @ weight.T + bias), weight=weight, bias=bias)


def _refuses_the_pickle(path: Path, load, error, expected: str) -> None:
    message = refused(lambda: load(path), error)
    assert f"{path}: holds pickled Python objects other than tensors (posix.system)" in message, message
    assert expected in message and "weights_only" not in message and "WeightsUnpickler" not in message
    assert not path.with_suffix(".ran").exists()


def test_a_pickle_in_an_outputs_file_is_refused_in_our_words(tmp_path):
    path = pickled(tmp_path / "outputs.pt", {"ids": IDS, "logits": torch.zeros(12, 3)})
    _refuses_the_pickle(path, ModelOutputs.load, OutputsError, "expected a dict of 'ids' (N strings) and one of")


def test_a_pickle_in_features_or_detector_statistics_is_refused_in_our_words(tmp_path):
    path = pickled(tmp_path / "features.pt", {"ids": IDS, "features": torch.zeros(12, 3)})
    _refuses_the_pickle(path, Embeddings.load, OutputsError, "expected a dict of 'ids' (N strings) and 'features'")
    stats = _stats()
    path = tmp_path / "stats.pt"
    stats.save(path)
    torch.save({**torch.load(path, weights_only=True), "payload": Payload(path.with_suffix(".ran"))}, path)
    _refuses_the_pickle(path, DetectorStats.load, OutputsError, "expected a DetectorStats file")


def test_a_pickle_in_a_weights_file_is_refused_in_our_words(tmp_path):
    from imagenet_suite.inference import load_model

    path = pickled(tmp_path / "weights.pth", dict(load_model("timm:test_resnet", "none").model.state_dict()))
    _refuses_the_pickle(
        path, lambda p: load_model("timm:test_resnet", p), ConfigError, "expected safetensors or a state dict"
    )


def _saved_stats(tmp_path: Path, change=None) -> Path:
    """A saved statistics file, its entries then edited by ``change`` and sealed again with their content hash
    (as a writer that wrote those entries would have): what :meth:`DetectorStats.load` checks past the hash."""
    path = tmp_path / "stats.pt"
    _stats().save(path)
    if change is not None:
        data = torch.load(path, weights_only=True)
        data = change({k: v for k, v in data.items() if k != CONTENT_SHA256})
        if isinstance(data, dict) and "format" in data:
            data[CONTENT_SHA256] = stats_content_sha256(data)
        torch.save(data, path)
    return path


def _without(key):
    return lambda data: {k: v for k, v in data.items() if k != key}


def _with(**values):
    return lambda data: {**data, **values}


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda path: path.write_bytes(path.read_bytes()[: path.stat().st_size // 2]), r"not a readable torch file"),
        (lambda path: torch.save(torch.zeros(3), path), r"expected a DetectorStats file .*, got a Tensor"),
        (lambda path: torch.save({"weight": torch.zeros(2, 2)}, path), r"no 'format' entry and not every field"),
    ],
)
def test_a_damaged_detector_statistics_file_is_one_line(tmp_path, damage, message):
    path = _saved_stats(tmp_path)
    damage(path)
    assert re.search(f"stats.pt: {message}", refused(lambda: DetectorStats.load(path)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (_with(format="imagenet-suite-detector-stats/9"), r"format 'imagenet-suite-detector-stats/9'; this version"),
        (_without("precision"), r"missing entries \['precision'\]"),
        (_with(surplus=torch.zeros(2)), r"unknown entries \['surplus'\]"),
        (_with(preset="mine"), r"'preset' is 'mine', expected one of \['ninco', 'openood_v15'\]"),
        (_with(knn_k="many"), r"'knn_k' must be a positive int, got 'many'"),
        (_with(vim_alpha=float("nan")), r"'vim_alpha' must be a finite number or None, got nan"),
        (_with(precision=torch.zeros(5, 6, dtype=torch.float64)), r"'precision' has shape \(5, 6\), expected \[d, d\]"),
        (
            _with(class_means=torch.zeros(3, 5, dtype=torch.float64)),
            r"'class_means' \[C, d\] has 3 classes but 'weight' has 4",
        ),
        (
            _with(class_means=torch.zeros(4, 5, dtype=torch.int64)),
            r"'class_means' must be a float tensor, got torch.int64",
        ),
        (lambda d: {**d, "bias": d["bias"].clone().fill_(float("inf"))}, r"'bias' holds NaN or inf"),
        (lambda d: {**d, "vim_dim": 1}, r"'vim_null_space' has 3 columns, expected d - vim_dim = 4"),
        (_with(extra={"vim": 3}), r"'extra' must map names to descriptions"),
    ],
)
def test_detector_statistics_entries_are_checked_one_by_one(tmp_path, change, message):
    path = _saved_stats(tmp_path, change)
    assert re.search(f"stats.pt: {message}", refused(lambda: DetectorStats.load(path)))


def test_detector_statistics_round_trip_and_files_written_without_a_format_entry_are_still_read(tmp_path):
    stats = _stats()
    path = _saved_stats(tmp_path)
    assert torch.load(path, weights_only=True)["format"] == "imagenet-suite-detector-stats/1"
    again = DetectorStats.load(path)
    assert again.vim_dim == stats.vim_dim and torch.equal(again.vim_null_space, stats.vim_null_space)
    legacy = _saved_stats(tmp_path, _without("format"))  # what the previous version wrote: every field
    assert torch.equal(DetectorStats.load(legacy).precision, stats.precision)


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (lambda p: p.write_bytes(b"PK\x03\x04 truncated"), r"f.pt: not a readable torch file"),
        (
            lambda p: torch.save({"ids": IDS, "features": torch.zeros(12)}, p),
            r"'features' must be \[N, d\], got shape \(12,\)",
        ),
        (lambda p: torch.save({"ids": IDS, "features": torch.zeros(12, 2, dtype=torch.int32)}, p), r"float"),
        (lambda p: torch.save({"ids": IDS}, p), r"no 'features' entry"),
        (
            lambda p: np.savez(p.with_suffix(".npz"), ids=np.asarray(IDS, dtype=object), features=np.zeros((12, 2))),
            r"f.npz: 'ids.npy' holds Python objects \(dtype object\)",
        ),
    ],
)
def test_a_damaged_features_file_is_one_line(tmp_path, write, message):
    write(tmp_path / "f.pt")
    path = tmp_path / "f.npz" if (tmp_path / "f.npz").exists() else tmp_path / "f.pt"
    assert re.search(message, refused(lambda: Embeddings.load(path)))
