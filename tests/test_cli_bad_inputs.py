"""Bad input to any CLI command: exit code 2 and one line naming the file or argument, never a traceback.

One table per command; each row lays out its bad input in a temporary folder, runs ``imagenet-suite``
in-process (``cli.main(argv)``; rows that set environment variables a library reads at import, in a
subprocess, as does one smoke test of the console entry point), and checks the exit code, that stderr is one line (argparse's own errors: its usage,
then one error line), that it matches the row's pattern, and that no traceback was printed.
A disk-full build runs in a private mount namespace on a tiny tmpfs, then resumes there.
"""

from __future__ import annotations

import ast
import functools
import http.server
import io
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.dataset.folder import DatasetFolder
from tests.fixtures import imagenet_layouts as fx
from tests.helpers import REPO_ROOT, folder_bytes, run_cli
from tests.test_trust_images import undefined_huffman_table, with_frame_size


@dataclass(frozen=True)
class Case:
    """``args(world)`` → the CLI arguments; ``expect``: a regex stderr's error line must match."""

    args: Callable[[World], list[str]]
    expect: str
    usage: bool = False  # an argparse error (its usage, then one error line)
    env: Callable[[World], dict[str, str]] | None = None
    no_cuda: bool = False  # run as on a machine without CUDA (the case is its absence)


class World:
    """Bad inputs laid out once in a temporary folder (see each attribute)."""

    def __init__(self, root: Path, val_images):
        self.root = root
        self.tar = fx.write_tar_layout(root / "tar", val_images)  # a good manual dir (tar layout)
        self.pins = self.tar / "checksums.tsv"
        self.a_file = root / "a-file.txt"
        self.a_file.write_text("not a folder\n")
        self.dataset = build_dataset(
            "imagenet_val",
            root / "built",
            options=BuildOptions(manual_dir=self.tar, pins=read_pins_file(self.pins), progress=False),
        )
        self.corrupt_info = self._copy(self.dataset, "corrupt-info")
        info = self.corrupt_info / "build_info.json"
        info.write_bytes(info.read_bytes()[:200])
        self.blocked = root / "blocked"  # --out where the dataset folder would be is a file
        self.blocked.mkdir()
        (self.blocked / self.dataset.name).write_text("in the way\n")
        self.non_hex_pins = root / "non-hex.tsv"
        self.non_hex_pins.write_text(
            f"ILSVRC2012_img_val.tar\t{(self.tar / 'ILSVRC2012_img_val.tar').stat().st_size}\t{'g' * 64}\n"
        )
        self.bomb = self._val_folders("bomb", val_images, 3, with_frame_size(val_images[0].data, 60000, 60000))
        self.bomb_no_end = self._val_folders(
            "bomb-no-eoi", val_images, 3, with_frame_size(val_images[0].data, 60000, 60000)[:-2]
        )
        self.bomb_dataset = build_dataset(
            "imagenet_val",
            root / "bomb-built",
            options=BuildOptions(manual_dir=self.bomb, max_pixels=None, progress=False),
        )
        self.undecodable_dataset = build_dataset(
            "imagenet_val",
            root / "undecodable-built",
            options=BuildOptions(
                progress=False,
                manual_dir=self._val_folders("undecodable", val_images, 5, undefined_huffman_table(val_images[5].data)),
            ),
        )
        self.duplicate = self._duplicate_tar(val_images)
        self.escaping = self._escaping_symlink(val_images)
        self.outputs = self._npz(
            "outputs.npz",
            ids=np.asarray([i.image_id for i in val_images]),
            logits=np.zeros((len(val_images), 1000), np.float32),
        )
        self.non_utf8_ids = self._npz(
            "non-utf8.npz",
            ids=np.asarray([b"\xff\xfe"] * len(val_images), dtype="S2"),
            logits=np.zeros((len(val_images), 1000), np.float32),
        )
        self.bad_crc = self._bad_crc()
        self.absurd_header = self._absurd_header(len(val_images))
        self.truncated_jpeg = root / "truncated.JPEG"  # the headers, then half the scan data
        self.truncated_jpeg.write_bytes(val_images[0].data[: len(val_images[0].data) // 2])

    def _copy(self, folder: Path, name: str) -> Path:
        return Path(shutil.copytree(folder, self.root / name / folder.name))

    def _val_folders(self, name: str, images, index: int, data: bytes) -> Path:
        images = list(images)
        images[index] = fx.ValImage(images[index].image_id, data, images[index].label, images[index].boxes)
        return fx.write_folders_layout(self.root / name, images)

    def _duplicate_tar(self, images) -> Path:
        manual = fx.write_tar_layout(self.root / "duplicate", images)
        with tarfile.open(manual / "ILSVRC2012_img_val.tar", "a") as tar:
            info = tarfile.TarInfo(images[2].file_name)
            info.size = len(images[3].data)
            tar.addfile(info, io.BytesIO(images[3].data))
        fx.write_checksums(manual)
        return manual

    def _escaping_symlink(self, images) -> Path:
        manual = fx.write_folders_layout(self.root / "escaping", images)
        image = next(manual.rglob(images[0].file_name))
        target = self.root / "outside.JPEG"
        target.write_bytes(image.read_bytes())
        image.unlink()
        image.symlink_to(target)
        return manual

    @functools.cached_property
    def kmeans_subset(self) -> Path:
        """A ``kmeans_hierarchy`` over the classes present in :attr:`dataset` only (not the 1000 ImageNet-1k)."""
        ids = DatasetFolder(self.dataset).read_table(None, None, ["id"]).column("id").to_pylist()
        features = np.random.default_rng(0).normal(size=(len(ids), 4)).astype(np.float32)
        outputs = self._npz("kmeans-features.npz", ids=np.asarray(ids), features=features)
        options = {"outputs": str(outputs), "classes": "present"}
        return build_dataset(
            "kmeans_hierarchy",
            self.root / "kmeans",
            options=BuildOptions(inputs=[self.dataset], builder_options=options, progress=False),
        )

    def _npz(self, name: str, **arrays) -> Path:
        path = self.root / name
        np.savez(path, **arrays)
        return path

    def _bad_crc(self) -> Path:
        data = bytearray(self.outputs.read_bytes())
        data[data.find(b"logits.npy") + 200] ^= 0x01  # inside the stored (uncompressed) logits data
        path = self.root / "bad-crc.npz"
        path.write_bytes(bytes(data))
        return path

    def _absurd_header(self, rows: int) -> Path:
        path = self.root / "absurd.npz"
        with zipfile.ZipFile(self.outputs) as good, zipfile.ZipFile(path, "w") as bad:
            bad.writestr("ids.npy", good.read("ids.npy"))
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                header, {"descr": "<f4", "fortran_order": False, "shape": (10**12, 10**6)}
            )
            bad.writestr("logits.npy", header.getvalue() + b"\0" * (rows * 4))  # the header starts with the magic
        return path


def _predict(dataset: Path, out: Path, *extra: str, weights: str = "none") -> list[str]:
    """``predict`` of a timm model (random weights by default) on ``dataset`` into ``out``, plus ``extra``."""
    return ["predict", str(dataset), "--model", "timm:test_resnet", "--weights", weights, "--out", str(out), *extra]


def _evaluate(dataset: Path, out: Path, *extra: str) -> list[str]:
    """``evaluate`` of a random-weight timm model on ``dataset`` into ``out``, plus ``extra``."""
    return ["evaluate", "--model", "timm:test_resnet", "--weights", "none", "--datasets", str(dataset),
            "--out", str(out), *extra]  # fmt: skip


def _sweep(w: World, name: str, text: str | None, *extra: str, out: Path | None = None) -> list[str]:
    """``evaluate --models`` of the models file ``models-<name>.txt`` holding ``text`` (None: no file)."""
    zoo = w.root / f"models-{name}.txt"
    if text is not None:
        zoo.write_text(text)
    out = out or w.root / f"sweep-{name}"
    return ["evaluate", "--models", str(zoo), "--datasets", str(w.dataset), "--out", str(out), *extra]


def _run_folder(w: World) -> Path:
    """A run folder of one model (its run.json), where a sweep folder is expected."""
    folder = w.root / "one-run"
    folder.mkdir(exist_ok=True)
    (folder / "run.json").write_text("{}\n")
    return folder


def _fit_stats(train: Path, out: Path, *extra: str) -> list[str]:
    """``ood fit-stats`` of a random-weight timm model on ``train`` into ``out``, plus ``extra``."""
    return ["ood", "fit-stats", "--model", "timm:test_resnet", "--weights", "none", "--train", str(train),
            "--out", str(out), "--device", "cpu", *extra]  # fmt: skip


def _leaderboard(w: World, *flags: str, groups: str | None = None, name: str = "") -> list[str]:
    """``leaderboard`` of one valid run folder (written once), with ``flags`` and, given ``groups``, a
    groups file of that text (``groups-<name>.csv``)."""
    from tests.test_read_runs import suite_json

    run = w.root / "leaderboard-run"
    if not run.exists():
        run.mkdir()
        (run / "suite.json").write_text(json.dumps(suite_json("timm:m", 0.5)))
    if groups is not None:
        (w.root / f"groups-{name}.csv").write_text(groups)
        flags = (*flags, "--groups", str(w.root / f"groups-{name}.csv"))
    return ["leaderboard", str(run), "--out", str(w.root / "board"), *flags]


def _report_folder(w: World, name: str, files: dict[str, str]) -> list[str]:
    """``report`` of a folder ``name`` holding ``files`` (name → text)."""
    folder = w.root / name
    folder.mkdir(exist_ok=True)
    for file_name, text in files.items():
        (folder / file_name).write_text(text)
    return ["report", str(folder)]


HUGE = "1000000000"  # a pasted number: each scaling flag refuses it (issue 40)


def _unloadable(w: World) -> str:
    """A user model whose module raises when imported: a row run with it whose one-line error is the row's was
    refused before any model was loaded (loading it first ends in "importing ... failed (RuntimeError: ...)")."""
    path = w.root / "unloadable_model.py"
    if not path.exists():
        path.write_text('raise RuntimeError("the model was loaded before the arguments were checked")\n')
    return f"{path}:make"


def _unloaded(w: World, command: str, out: str, *extra: str) -> list[str]:
    """``predict``, ``evaluate`` or ``ood fit-stats`` of :func:`_unloadable` on the good dataset, plus ``extra``."""
    model = ["--model", _unloadable(w), "--weights", "none"]
    if command == "predict":
        return ["predict", str(w.dataset), *model, "--out", str(w.root / f"{out}.pt"), *extra]
    if command == "evaluate":
        return ["evaluate", *model, "--datasets", str(w.dataset), "--out", str(w.root / out), *extra]
    return ["ood", "fit-stats", *model, "--train", str(w.dataset), "--out", str(w.root / f"{out}.safetensors"), *extra]


CASES: dict[str, dict[str, Case]] = {
    "build": {
        "misspelt config": Case(
            lambda w: ["build", "imagenet_val", "--config", "boxs", "--out", str(w.root / "b1")],
            r"builder 'imagenet_val' has no config 'boxs'; did you mean 'boxes'\?$",
        ),
        "misspelt config of 95": Case(
            lambda w: ["build", "imagenet_c", "--config", "gausian_noise_3", "--out", str(w.root / "b2")],
            r"builder 'imagenet_c' has no config 'gausian_noise_3'; did you mean 'gaussian_noise_3'\?$",
        ),
        "unknown config of 95": Case(
            lambda w: ["build", "imagenet_c", "--config", "x", "--out", str(w.root / "b3")],
            r"no config 'x'; known configs: gaussian_noise_1, .*, saturate_5 \(95 in all\)$",
        ),
        "misspelt builder option": Case(
            lambda w: ["build", "perturbations", "--option", "severites=3", "--out", str(w.root / "b4")],
            r"builder 'perturbations' has no option 'severites'; did you mean 'severities'\?$",
        ),
        "misspelt flag": Case(
            lambda w: ["build", "imagenet_val", "--out", str(w.root / "b5"), "--num-procs", "2"],
            r"unrecognized arguments: --num-procs 2; did you mean --num-proc\?$",
            usage=True,
        ),
        "--out names a file": Case(
            lambda w: [
                "build",
                "imagenet_val",
                "--manual-dir",
                str(w.tar),
                "--pins",
                str(w.pins),
                "--out",
                str(w.a_file),
            ],
            r"--out .*a-file.txt: is a file; expected a folder",
        ),
        "--out below a file": Case(
            lambda w: [
                "build",
                "imagenet_val",
                "--manual-dir",
                str(w.tar),
                "--pins",
                str(w.pins),
                "--out",
                str(w.a_file / "sub"),
            ],
            r"a-file.txt/sub.*: Not a directory",
        ),
        "dataset folder is a file": Case(
            lambda w: [
                "build",
                "imagenet_val",
                "--manual-dir",
                str(w.tar),
                "--pins",
                str(w.pins),
                "--out",
                str(w.blocked),
            ],
            r"imagenet_val-1.0.0: is a file; the dataset folder cannot be created there",
        ),
        "corrupt build_info.json": Case(
            lambda w: [
                "build",
                "imagenet_val",
                "--manual-dir",
                str(w.tar),
                "--pins",
                str(w.pins),
                "--out",
                str(w.corrupt_info.parent),
            ],
            r"corrupt-info/imagenet_val-1.0.0/build_info.json: not valid JSON",
        ),
        "missing --pins file": Case(
            lambda w: [
                "build",
                "imagenet_val",
                "--manual-dir",
                str(w.tar),
                "--pins",
                str(w.root / "nope.tsv"),
                "--out",
                str(w.root / "o1"),
            ],
            r"--pins .*nope.tsv: no such file",
        ),
        "non-hex pin": Case(
            lambda w: [
                "build",
                "imagenet_val",
                "--manual-dir",
                str(w.tar),
                "--pins",
                str(w.non_hex_pins),
                "--out",
                str(w.root / "o2"),
            ],
            r"non-hex.tsv:1: expected .*64 hex digits",
        ),
        "60000x60000 JPEG header": Case(
            lambda w: ["build", "imagenet_val", "--manual-dir", str(w.bomb), "--out", str(w.root / "o3")],
            r"ILSVRC2012_val_00000004.JPEG: 60000x60000 = 3,600,000,000 pixels",
        ),
        "60000x60000 without end marker": Case(
            lambda w: ["build", "imagenet_val", "--manual-dir", str(w.bomb_no_end), "--out", str(w.root / "o4")],
            r"ILSVRC2012_val_00000004.JPEG: 60000x60000 = 3,600,000,000 pixels",
        ),
        "one image id twice": Case(
            lambda w: [
                "build",
                "imagenet_val",
                "--manual-dir",
                str(w.duplicate),
                "--pins",
                str(w.duplicate / "checksums.tsv"),
                "--out",
                str(w.root / "o5"),
            ],
            r"member 'ILSVRC2012_val_00000003.JPEG' appears twice",
        ),
        "symlink out of the manual folder": Case(
            lambda w: ["build", "imagenet_val", "--manual-dir", str(w.escaping), "--out", str(w.root / "o6")],
            r"ILSVRC2012_val_00000001.JPEG is a symlink to .*outside.JPEG, outside",
        ),
        "undecodable with --deep-verify": Case(
            lambda w: [
                "build",
                "imagenet_val",
                "--manual-dir",
                str(w.root / "undecodable"),
                "--deep-verify",
                "--out",
                str(w.root / "o7"),
            ],
            r"ILSVRC2012_val_00000006.JPEG: not a readable image",
        ),
        "unknown builder": Case(
            lambda w: ["build", "imagenet_vall", "--out", str(w.root / "o8")], r"unknown builder 'imagenet_vall'"
        ),
        "--num-proc 0": Case(
            lambda w: [
                "build",
                "imagenet_val",
                "--manual-dir",
                str(w.tar),
                "--num-proc",
                "0",
                "--out",
                str(w.root / "o9"),
            ],
            r"--num-proc must be ≥ 1, got 0",
        ),
        "--num-proc huge": Case(
            lambda w: [
                "build",
                "imagenet_val",
                "--manual-dir",
                str(w.tar),
                "--num-proc",
                HUGE,
                "--out",
                str(w.root / "o14"),
            ],
            r"--num-proc must be at most 512 \(processes or CPUs: .*\), got 1,000,000,000$",
        ),
        "--max-pixels -5": Case(
            lambda w: ["build", "imagenet_val", "--max-pixels", "-5", "--out", str(w.root / "o10")],
            r"argument --max-pixels: expected a positive number of pixels or 'none'",
            usage=True,
        ),
        "missing wnids_file": Case(
            lambda w: [
                "build",
                "wordnet_hierarchy",
                "--option",
                f"wnids_file={w.root / 'none.txt'}",
                "--out",
                str(w.root / "o11"),
            ],
            r"none.txt: no such wnids file",
        ),
        "imagenet_v2 multi-labels without --option labels": Case(
            lambda w: [
                "build",
                "imagenet_v2",
                "--config",
                "matched_frequency_multilabel",
                "--out",
                str(w.root / "o12"),
            ],
            r"imagenet_v2 config matched_frequency_multilabel needs --option labels=FILE: the Anzaku et al. 2024",
        ),
        "imagenet_v2 multi-labels from a missing file": Case(
            lambda w: [
                "build",
                "imagenet_v2",
                "--config",
                "matched_frequency_multilabel",
                "--option",
                f"labels={w.root / 'none.json'}",
                "--out",
                str(w.root / "o13"),
            ],
            r"none.json: no such labels file",
        ),
    },
    "verify": {
        "not a dataset folder": Case(lambda w: ["verify", str(w.root)], r"build_info.json is missing"),
        "corrupt build_info.json": Case(lambda w: ["verify", str(w.corrupt_info)], r"build_info.json: not valid JSON"),
        "image over the bound": Case(
            lambda w: ["verify", str(w.bomb_dataset)], r"row 'ILSVRC2012_val_00000004', column 'image': 60000x60000"
        ),
        "undecodable with --deep-verify": Case(
            lambda w: ["verify", str(w.undecodable_dataset), "--deep-verify"],
            r"row 'ILSVRC2012_val_00000006', column 'image': not a readable image",
        ),
    },
    "predict": {
        "a model string without a source": Case(
            lambda w: ["predict", str(w.dataset), "--model", "resnet50", "--out", str(w.root / "p1.pt")],
            r"model 'resnet50' is not one of timm:<name>, torchvision:<name>",
        ),
        "weights file missing": Case(
            lambda w: _predict(w.dataset, w.root / "p2.pt", weights=str(w.root / "no.pth")),
            r"weights file .*no.pth does not exist",
        ),
        "--out not .pt": Case(
            lambda w: _predict(w.dataset, w.root / "p.npz"),
            r"--out .*p.npz must end in .pt",
        ),
        "--prediction-store is a file": Case(
            lambda w: _predict(w.dataset, w.root / "p9.pt", "--prediction-store", str(w.a_file)),
            r"--prediction-store .*a-file.txt: is a file; expected a folder \(made if absent\)$",
        ),
        "--batch-size 0": Case(
            lambda w: _predict(w.dataset, w.root / "p3.pt", "--batch-size", "0"),
            r"--batch-size must be at least 1, got 0",
        ),
        "an undecodable image (in a DataLoader worker)": Case(
            lambda w: _predict(w.undecodable_dataset, w.root / "p4.pt", "--workers", "2", "--no-progress"),
            r"image of row 'ILSVRC2012_val_00000006' cannot be decoded",
        ),
        "a decompression bomb": Case(
            lambda w: _predict(w.bomb_dataset, w.root / "p5.pt", "--workers", "0", "--no-progress"),
            r"image of row '.*' cannot be decoded \(Image size \(3600000000 pixels\) exceeds limit",
        ),
        "a decompression bomb on the GPU decode path": Case(  # the device decoders have no pixel bound
            lambda w: _predict(
                w.bomb_dataset, w.root / "p7.pt", "--device", "cpu", "--gpu-decode", "--workers", "0", "--no-progress"
            ),
            r"image of row '.*' cannot be decoded \(Image size \(3600000000 pixels\) exceeds limit",
        ),
        # pretrained weights that cannot be fetched: the weights line, then one error line (two stderr
        # lines, so not in this table): tests/test_model_weights.py
        "an unknown weights tag": Case(
            lambda w: ["predict", str(w.dataset), "--model", "torchvision:resnet50.V3", "--out", str(w.root / "p8.pt")],
            r"model 'torchvision:resnet50.V3': torchvision has no weights 'V3' for resnet50 \(valid: IMAGENET1K_V1, "
            r"IMAGENET1K_V2, DEFAULT = IMAGENET1K_V2\)",
        ),
        "a CUDA device on a machine without one": Case(
            lambda w: _predict(w.dataset, w.root / "p6.pt", "--device", "cuda"),
            r"--device cuda: this machine has no CUDA device",
            no_cuda=True,
        ),
        # issue 40: each scaling number and each path refused before the model is loaded
        "--batch-size huge": Case(
            lambda w: _unloaded(w, "predict", "h1", "--batch-size", HUGE),
            r"--batch-size must be at most 65,536 \(images per model call: .*\), got 1,000,000,000$",
        ),
        "--workers huge": Case(
            lambda w: _unloaded(w, "predict", "h2", "--workers", HUGE),
            r"--workers must be at most 512 \(DataLoader worker processes: .*\), got 1,000,000,000$",
        ),
        "--prediction-store below a file": Case(
            lambda w: _unloaded(w, "predict", "h3", "--prediction-store", str(w.a_file / "store")),
            r"--prediction-store .*a-file.txt/store: .*a-file.txt is a file, not a folder$",
        ),
        "--out below a file": Case(
            lambda w: [
                "predict",
                str(w.dataset),
                "--model",
                _unloadable(w),
                "--weights",
                "none",
                "--out",
                str(w.a_file / "o.pt"),
            ],
            r"--out .*a-file.txt/o.pt: .*a-file.txt is a file, not a folder$",
        ),
        "--zero-shot-stats is a folder": Case(
            lambda w: [
                "predict",
                str(w.dataset),
                "--model",
                "open_clip:ViT-B-32.openai",
                "--out",
                str(w.root / "h4.pt"),
                "--zero-shot-stats",
                str(w.root),
            ],
            r"--zero-shot-stats .*: is a folder; expected the path of a file to write$",
        ),
    },
    "ood": {
        "--out not .safetensors": Case(
            lambda w: _fit_stats(w.dataset, w.root / "s.pt"), r"--out .*s.pt must end in .safetensors"
        ),
        "--per-class 0": Case(
            lambda w: _fit_stats(w.dataset, w.root / "s1.safetensors", "--per-class", "0"),
            r"--per-class must be a number of images per class, at least 1, or None \(every row\); got 0",
        ),
        "--knn-rows not a number": Case(
            lambda w: _fit_stats(w.dataset, w.root / "s2.safetensors", "--knn-rows", "many"),
            r"--knn-rows must be a number of KNN bank rows, at least 1, or None \(all rows\); got 'many'",
        ),
        "an unknown preset": Case(
            lambda w: _fit_stats(w.dataset, w.root / "s3.safetensors", "--preset", "openood"),
            r"unknown OOD preset 'openood'; expected one of \['ninco', 'openood_v15'\]",
        ),
        "an unknown detector": Case(
            lambda w: _fit_stats(w.dataset, w.root / "s4.safetensors", "--detectors", "mahalanobis", "odin"),
            r"--detectors: unknown \['odin'\]",
        ),
        "--val with the ninco preset": Case(
            lambda w: _fit_stats(w.dataset, w.root / "s6.safetensors", "--val", str(w.dataset)),
            r"--val: the ninco preset fits every detector on the train set and reads no val set",
        ),
        "--train an imagenet_val build (not a train split)": Case(
            lambda w: _fit_stats(w.dataset, w.root / "s7.safetensors"),
            r"--train .*: the build is imagenet_val \(split 'validation'\), not ImageNet's train split "
            r"\(imagenet_train 'train'\): .*; pass --allow-non-train to fit on it anyway",
        ),
        "--train not a built dataset": Case(
            lambda w: _fit_stats(w.root, w.root / "s5.safetensors"),
            r"bad-inputs.* is not an imagenet-suite dataset folder",
        ),
        "no subcommand": Case(lambda w: ["ood"], r"the following arguments are required: SUBCOMMAND", usage=True),
        "--per-class huge": Case(
            lambda w: _unloaded(w, "ood", "h1", "--per-class", HUGE),
            r"--per-class must be at most 1,300 \(images per class: .*\), got 1,000,000,000$",
        ),
        "--knn-rows huge": Case(
            lambda w: _unloaded(w, "ood", "h2", "--knn-rows", HUGE),
            r"--knn-rows must be at most 1,281,167 \(KNN bank rows: .*\), got 1,000,000,000$",
        ),
        "--batch-size huge": Case(
            lambda w: _unloaded(w, "ood", "h3", "--batch-size", HUGE), r"--batch-size must be at most 65,536 .*"
        ),
        "--workers huge": Case(
            lambda w: _unloaded(w, "ood", "h4", "--workers", HUGE), r"--workers must be at most 512 .*"
        ),
    },
    "evaluate": {
        "a folder that is not a built dataset": Case(
            lambda w: _evaluate(w.root, w.root / "e1"), r"--datasets .*: not a built dataset folder"
        ),
        "--adversarial negative": Case(
            lambda w: _evaluate(w.dataset, w.root / "e2", "--adversarial", "-3"),
            r"--adversarial must be 0 \(no attacks\) or a number of images, got -3",
        ),
        "--attack naming an unknown attack": Case(
            lambda w: _evaluate(w.dataset, w.root / "e4", "--adversarial", "2", "--attack", "fgsm,cw"),
            r"--attack: unknown attack 'cw'; expected one of fgsm, pgd, autoattack-linf, autoattack-l2, autoattack-l1$",
        ),
        "--attack with a radius for PGD": Case(
            lambda w: _evaluate(w.dataset, w.root / "e5", "--adversarial", "2", "--attack", "pgd:eps=4/255"),
            r"--attack: 'pgd:eps=4/255': pgd is Beyond Accuracy's fixed protocol \(L∞ eps 8/255\); only the "
            r"autoattack-\* attacks take :eps=$",
        ),
        "--attack with a radius that is no number": Case(
            lambda w: _evaluate(w.dataset, w.root / "e6", "--adversarial", "2", "--attack", "autoattack-l2:eps=two"),
            r"--attack: 'autoattack-l2:eps=two': expected autoattack-l2:eps=VALUE, VALUE a positive number or a/b$",
        ),
        "--attack naming an attack twice": Case(
            lambda w: _evaluate(
                w.dataset, w.root / "e7", "--adversarial", "2", "--attack", "autoattack-l1,autoattack-l1"
            ),
            r"--attack: autoattack-l1 is named twice; each attack runs once, at one radius$",
        ),
        "--attack without --adversarial": Case(
            lambda w: _evaluate(w.dataset, w.root / "e8", "--attack", "autoattack-linf"),
            r"--attack is only used with --adversarial N \(images to attack\)$",
        ),
        "--attack-convention misspelt": Case(
            lambda w: _evaluate(w.dataset, w.root / "e21", "--adversarial", "2", "--attack-convention", "pixels"),
            r"argument --attack-convention: invalid choice: 'pixels' \(choose from .*\); did you mean 'pixel'\?$",
            usage=True,
        ),
        "--attack-convention without --adversarial": Case(
            lambda w: _evaluate(w.dataset, w.root / "e22", "--attack-convention", "pixel"),
            r"--attack-convention is only used with --adversarial N \(images to attack\)$",
        ),
        "--out is a file": Case(
            lambda w: _evaluate(w.dataset, w.a_file), r"--out .*a-file.txt: is a file; expected a run folder"
        ),
        "--ray-address without --executor ray": Case(
            lambda w: _evaluate(w.dataset, w.root / "e3", "--ray-address", "localhost:1"),
            r"--ray-address is only used with --executor ray",
        ),
        "--hierarchy not a folder": Case(
            lambda w: _evaluate(w.dataset, w.root / "e4", "--hierarchy", str(w.a_file)),
            r"--hierarchy .*a-file.txt: not a built hierarchy folder \(.*a-file.txt: not a directory\)",
        ),
        "--hierarchy not a hierarchy build": Case(
            lambda w: _evaluate(w.dataset, w.root / "e5", "--hierarchy", str(w.dataset)),
            r"--hierarchy .*: a imagenet_val dataset, expected a wordnet_hierarchy or kmeans_hierarchy folder",
        ),
        "--hierarchy over other classes": Case(
            lambda w: _evaluate(w.dataset, w.root / "e6", "--hierarchy", str(w.kmeans_subset)),
            r"--hierarchy .*kmeans_hierarchy-1.0.0-seed0-\w+: a hierarchy over \d+ other classes, expected the 1000 "
            r"ImageNet-1k classes in class-index order",
        ),
        "--bootstrap negative": Case(
            lambda w: _evaluate(w.dataset, w.root / "e10", "--bootstrap", "-1"),
            r"--bootstrap must be 0 \(no intervals\) or a number of resamples, got -1",
        ),
        "--bootstrap-seed negative": Case(
            lambda w: _evaluate(w.dataset, w.root / "e11", "--bootstrap-seed", "-2"),
            r"--bootstrap-seed must be 0 or more, got -2",
        ),
        "--bootstrap not a number": Case(
            lambda w: _evaluate(w.dataset, w.root / "e12", "--bootstrap", "many"),
            r"argument --bootstrap: invalid int value: 'many'",
            usage=True,
        ),
        "--benchmark without its builds": Case(
            lambda w: _evaluate(w.dataset, w.root / "e13", "--benchmark", "openood-v1.5-imagenet"),
            r"--benchmark openood-v1.5-imagenet (reads builds that --datasets lacks: popular_ood/openood_id_split, "
            r"popular_ood/ssb_hard, ninco/ninco, .*|: add a built imagenet_val folder to --datasets)$",
        ),
        "--benchmark unknown": Case(
            lambda w: _evaluate(w.dataset, w.root / "e14", "--benchmark", "openood-v1"),
            r"argument --benchmark: invalid choice: 'openood-v1'",
            usage=True,
        ),
        "--models: no such file": Case(
            lambda w: _sweep(w, "missing", None), r"--models .*models-missing.txt: no such models file"
        ),
        "--models: a bad field on a line": Case(
            lambda w: _sweep(w, "field", "# zoo\ntimm:test_resnet weights=none seed=x\n"),
            r"--models .*models-field.txt:2: seed must be an integer >= 0, got 'x'$",
        ),
        "--models: a model twice": Case(
            lambda w: _sweep(w, "twice", "timm:test_resnet weights=none\ntimm:test_resnet weights=none seed=0\n"),
            r"--models .*models-twice.txt:2: the same model as .*models-twice.txt:1 \(spec, weights and seed\)",
        ),
        "--models with --model": Case(
            lambda w: [*_sweep(w, "both", "timm:test_resnet\n"), "--model", "timm:test_resnet"],
            r"argument --model: not allowed with argument --models",
            usage=True,
        ),
        "--models into a run folder of one model": Case(
            lambda w: _sweep(w, "into-run", "timm:test_resnet weights=none\n", out=_run_folder(w)),
            r"--out .*one-run: holds the run folder of one model \(run.json\); a sweep writes a run folder per "
            r"model under --out",
        ),
        "--gpus-per-task out of range": Case(
            lambda w: _evaluate(w.dataset, w.root / "e13", "--executor", "ray", "--gpus-per-task", "0"),
            r"--gpus-per-task must be a number in \(0, 1\], got 0.0$",
        ),
        "--gpus-per-task without --executor ray": Case(
            lambda w: _evaluate(w.dataset, w.root / "e14", "--gpus-per-task", "0.5"),
            r"--gpus-per-task is only used with --executor ray$",
        ),
        "--prediction-store is a file": Case(
            lambda w: _evaluate(w.dataset, w.root / "e15", "--prediction-store", str(w.a_file)),
            r"--prediction-store .*a-file.txt: is a file; expected a folder \(made if absent\)$",
        ),
        "--bootstrap huge (runs until killed before)": Case(
            lambda w: _unloaded(w, "evaluate", "h1", "--bootstrap", HUGE),
            r"--bootstrap must be at most 100,000 \(bootstrap resamples: 100 times the default\), got 1,000,000,000$",
        ),
        "--adversarial huge": Case(
            lambda w: _unloaded(w, "evaluate", "h2", "--adversarial", HUGE),
            r"--adversarial must be at most 50,000 \(images to attack: the images of ImageNet-1k val\), "
            r"got 1,000,000,000$",
        ),
        "--batch-size huge": Case(
            lambda w: _unloaded(w, "evaluate", "h3", "--batch-size", HUGE), r"--batch-size must be at most 65,536 .*"
        ),
        "--workers huge": Case(
            lambda w: _unloaded(w, "evaluate", "h4", "--workers", HUGE), r"--workers must be at most 512 .*"
        ),
        "--num-proc huge": Case(
            lambda w: _unloaded(w, "evaluate", "h5", "--executor", "ray", "--num-proc", HUGE),
            r"--num-proc must be at most 512 \(processes or CPUs: .*\), got 1,000,000,000$",
        ),
        "--out below a file": Case(
            lambda w: [*_unloaded(w, "evaluate", "h6")[:-2], "--out", str(w.a_file / "run")],
            r"--out .*a-file.txt/run: .*a-file.txt is a file, not a folder$",
        ),
        "--prediction-store below a file": Case(
            lambda w: _unloaded(w, "evaluate", "h7", "--prediction-store", str(w.a_file / "store")),
            r"--prediction-store .*a-file.txt/store: .*a-file.txt is a file, not a folder$",
        ),
        "--prediction-store with --no-dedup": Case(
            lambda w: _evaluate(w.dataset, w.root / "e16", "--prediction-store", str(w.root / "s"), "--no-dedup"),
            r"--prediction-store is only used with --dedup \(it keeps deduplicated predictions\)$",
        ),
    },
    "leaderboard": {
        "a folder without suite.json": Case(
            lambda w: ["leaderboard", str(w.root), "--out", str(w.root / "board")],
            r"suite.json: not a readable suite.json of `imagenet-suite evaluate`",
        ),
        "a suite.json of something else": Case(
            lambda w: ["leaderboard", str(w.pins), "--out", str(w.root / "board")],
            r"checksums.tsv: not a readable suite.json",
        ),
        "--groups missing": Case(
            lambda w: _leaderboard(w, "--groups", str(w.root / "no-groups.csv")),
            r"--groups .*no-groups.csv: not a readable UTF-8 CSV file \(.*No such file",
        ),
        "--groups without a group column": Case(
            lambda w: _leaderboard(w, groups="model\ntimm:m\n", name="no-group"),
            r"--groups .*groups-no-group.csv: row 1: the header \['model'\] lacks the column\(s\) \['group'\]",
        ),
        "--groups an empty group": Case(
            lambda w: _leaderboard(w, groups="model,group\ntimm:m, \n", name="empty"),
            r"--groups .*groups-empty.csv: row 2: the group cell is empty$",
        ),
        "--groups a model the leaderboard lacks": Case(
            lambda w: _leaderboard(w, groups="group,model\nA,timm:x\n", name="unknown"),
            r"--groups .*groups-unknown.csv: row 2: model 'timm:x' is not one of the leaderboard's models \('timm:m'\)",
        ),
        "--groups a model in two groups of a setup": Case(
            lambda w: _leaderboard(w, groups="model,group\ntimm:m,A\ntimm:m,B\n", name="twice"),
            r"row 3: model 'timm:m' is in group 'B', but row 2 put it in group 'A' of the same setup 'all'",
        ),
        "--quba-weights three numbers": Case(
            lambda w: _leaderboard(w, "--quba-weights", "1,2,3"),
            r"--quba-weights takes 9 comma-separated numbers \(in the order accuracy, .*\) or dimension=weight pairs",
        ),
        "--quba-weights an unknown dimension": Case(
            lambda w: _leaderboard(w, "--quba-weights", "speed=2"),
            r"--quba-weights: unknown QUBA dimension 'speed'; known: accuracy, ",
        ),
        "--quba-weights not a number": Case(
            lambda w: _leaderboard(w, "--quba-weights", "accuracy=lots"),
            r"--quba-weights: 'lots' is not a finite number$",
        ),
        "--quba-weights summing to 0": Case(
            lambda w: _leaderboard(w, "--quba-weights", "0,0,0,0,0,0,0,0,0"),
            r"--quba-weights '0,0,0,0,0,0,0,0,0': the nine weights sum to 0$",
        ),
        "--reference a misspelt paper": Case(
            lambda w: _leaderboard(w, "--reference", "hesse2025,shi2042"),
            r"--reference: no reference zoo 'shi2042'; did you mean 'shi2024'\?$",
        ),
        "--reference a run of another protocol": Case(
            lambda w: _leaderboard(w, "--reference", "hesse2025"),
            r"run 'timm:m' was not evaluated under the protocol of Beyond Accuracy \(QUBA\), Hesse et al. 2025: weights "
            r"tag not recorded .*; pass --allow-protocol-mismatch to place it",
        ),
        "--reference a paper without comparable rows": Case(
            lambda w: _leaderboard(w, "--reference", "heuillet2025"),
            r"--reference: heuillet2025: Heuillet et al. 2025 published backbones fine-tuned on six downstream datasets",
        ),
    },
    "report": {
        "a file, not a folder": Case(
            lambda w: ["report", str(w.pins)], r"checksums.tsv: not a folder \(expected a run"
        ),
        "an empty folder": Case(
            lambda w: _report_folder(w, "report-empty", {}),
            r"report-empty: neither a run folder \(no suite.json\), a leaderboard folder \(no leaderboard_runs.json\)",
        ),
        "a run folder with a broken suite.json": Case(
            lambda w: _report_folder(w, "report-broken", {"suite.json": "{"}),
            r"suite.json: not a readable suite.json of `imagenet-suite evaluate`",
        ),
        "a leaderboard folder whose run folders are gone": Case(
            lambda w: _report_folder(
                w, "report-gone", {"leaderboard_runs.json": json.dumps({"runs": ["/nowhere/run"]})}
            ),
            r"leaderboard_runs.json: the run folder /nowhere/run has no suite.json \(moved or deleted\?\)$",
        ),
    },
    "score": {
        "misspelt --config of the dataset folder": Case(
            lambda w: ["score", str(w.dataset), "--outputs", str(w.outputs), "--config", "defualt"],
            r"imagenet_val-1.0.0 has no config 'defualt'; did you mean 'default'\?$",
        ),
        "misspelt flag standing for a required one": Case(
            lambda w: ["score", str(w.dataset), "--ouputs", str(w.outputs)],
            r"unrecognized arguments: --ouputs; did you mean --outputs\?$",
            usage=True,
        ),
        "misspelt choice": Case(
            lambda w: ["score", str(w.dataset), "--outputs", str(w.outputs), "--elca-variant", "mistake"],
            r"argument --elca-variant: invalid choice: 'mistake' \(choose from .*\); did you mean 'mistakes'\?$",
            usage=True,
        ),
        "misspelt metric": Case(
            lambda w: ["score", str(w.dataset), "--outputs", str(w.outputs), "--metrics", "calibraton"],
            r"unknown metric 'calibraton'; did you mean 'calibration'\?$",
        ),
        "outputs missing": Case(
            lambda w: ["score", str(w.dataset), "--outputs", str(w.root / "none.npz")],
            r"outputs file .*none.npz does not exist",
        ),
        "non-UTF-8 ids": Case(
            lambda w: ["score", str(w.dataset), "--outputs", str(w.non_utf8_ids)],
            r"non-utf8.npz: 'ids' row 0 .* is not UTF-8 text",
        ),
        "bad CRC": Case(
            lambda w: ["score", str(w.dataset), "--outputs", str(w.bad_crc)],
            r"bad-crc.npz: not a readable .npz file \(BadZipFile: Bad CRC-32",
        ),
        "absurd header": Case(
            lambda w: ["score", str(w.dataset), "--outputs", str(w.absurd_header)],
            r"absurd.npz: member 'logits.npy' declares shape \(1000000000000, 1000000\)",
        ),
        "--json into a missing folder": Case(
            lambda w: [
                "score",
                str(w.dataset),
                "--outputs",
                str(w.outputs),
                "--json",
                str(w.root / "missing" / "r.json"),
            ],
            r"--json .*missing/r.json: the folder .*missing does not exist",
        ),
        "--hierarchy over other classes": Case(
            lambda w: ["score", str(w.dataset), "--outputs", str(w.outputs), "--hierarchy", str(w.kmeans_subset)],
            r"--hierarchy .*: a hierarchy over \d+ other classes, expected the 1000 ImageNet-1k classes",
        ),
    },
    "push": {
        "existing public repository": Case(
            lambda w: ["push", str(w.dataset), "--repo-id", "org/public-set"],
            r"--repo-id org/public-set: the dataset repository exists and is public",
            env=lambda w: w.hub_env,
        ),
        "corrupt folder": Case(
            lambda w: ["push", str(w.corrupt_info), "--repo-id", "org/x"], r"build_info.json: not valid JSON"
        ),
    },
    "review": {  # each fails before any database is started
        "not a dataset folder": Case(lambda w: ["review", "open", str(w.root)], r"build_info.json is missing"),
        "port out of range": Case(
            lambda w: ["review", "open", str(w.dataset), "--port", "99999"], r"--port 99999: expected 1..65535"
        ),
        "outputs with a bad CRC": Case(
            lambda w: ["review", "open", str(w.dataset), "--outputs", str(w.bad_crc)],
            r"bad-crc.npz: not a readable .npz file",
        ),
        "remote database": Case(
            lambda w: ["review", "status", "x", "--database-uri", "mongodb://example.com:27017"], r"must be on loopback"
        ),
        "missing decision table": Case(
            lambda w: ["review", "import", "x", str(w.root / "none.csv")], r"none.csv does not exist"
        ),
        "missing table to compare": Case(
            lambda w: ["review", "status", "x", "--compare", str(w.root / "bob.csv")],
            r"--compare: decision table .*bob.csv does not exist",
        ),
        "load: --id-outputs without --outputs": Case(
            lambda w: ["review", "load", str(w.dataset), "--id-outputs", str(w.outputs)], r"need --outputs"
        ),
        "load: missing --features": Case(
            lambda w: ["review", "load", str(w.dataset), "--features", str(w.root / "none.pt")],
            r"--features .*none.pt does not exist",
        ),
        "open: --reference without --features": Case(
            lambda w: ["review", "open", str(w.dataset), "--reference", str(w.dataset)],
            r"--reference needs --features",
        ),
        "load: --fail-threshold out of range": Case(
            lambda w: ["review", "load", str(w.dataset), "--fail-threshold", "1.5"], r"expected an FPR between 0 and 1"
        ),
        "load: --embeddings-plot without --reference": Case(
            lambda w: ["review", "load", str(w.dataset), "--embeddings-plot", str(w.root / "p.png")],
            r"--embeddings-plot needs --reference",
        ),
        "load: missing --other-review": Case(
            lambda w: ["review", "load", str(w.dataset), "--other-review", str(w.root / "bob.csv")],
            r"--other-review .*bob.csv does not exist",
        ),
        "precheck: unknown wnid": Case(
            lambda w: ["review", "precheck", "quesadilla", "n99999999"], r"'n99999999' is not a WordNet 3.0 noun synset"
        ),
        "precheck: negative --max-steps": Case(
            lambda w: ["review", "precheck", "dog", "--max-steps", "-1"], r"--max-steps must be >= 0, got -1"
        ),
    },
    "info": {
        "misspelt builder": Case(
            lambda w: ["info", "objectnett"], r"unknown builder 'objectnett'; did you mean 'objectnet'\?$"
        ),
        "unknown builder": Case(
            lambda w: ["info", "cifar10"], r"unknown builder 'cifar10'; known builders: \w+, .* in all\)$"
        ),
        "misspelt flag": Case(
            lambda w: ["info", "imagenet_val", "--featurs"],
            r"unrecognized arguments: --featurs; did you mean --features\?$",
            usage=True,
        ),
    },
    "hierarchy": {
        "unknown class": Case(lambda w: ["hierarchy", "distance", "n99999999", "n01440764"], r"n99999999"),
        "regenerate: --wordnet without data.noun": Case(
            lambda w: ["hierarchy", "regenerate-imagenet1k", "--wordnet", str(w.root), "--out", str(w.root / "n.csv")],
            r"WordNet folder .* has no data.noun; .*apt-get install wordnet-base",
        ),
        "regenerate: --out is a folder": Case(
            lambda w: ["hierarchy", "regenerate-imagenet1k", "--out", str(w.root)],
            r"--out .*: is a folder; expected the path of the CSV to write",
        ),
        "the removed `hierarchy build` route": Case(
            lambda w: ["hierarchy", "build", "wordnet", "--out", str(w.root)],
            r"argument SUBCOMMAND: invalid choice: 'build'",
            usage=True,
        ),
    },
    "patchml": {
        "materialise: not a recipe": Case(
            lambda w: [
                "patchml",
                "materialise",
                str(w.dataset),
                "--input",
                str(w.dataset),
                "--out",
                str(w.root / "m1"),
            ],
            r"imagenet_val-1.0.0 is not a patchml folder with the recipe config",
        ),
        "materialise: not a dataset folder": Case(
            lambda w: ["patchml", "materialise", str(w.root), "--input", str(w.dataset), "--out", str(w.root / "m2")],
            r"build_info.json is missing",
        ),
        "materialise: no val source": Case(
            lambda w: ["patchml", "materialise", str(w.dataset), "--out", str(w.root / "m3")],
            r"give the val images: --input VAL .* or --manual-dir DIR",
        ),
        "table2: not a patchml build": Case(
            lambda w: ["patchml", "table2", str(w.dataset)],
            r"imagenet_val-1.0.0 holds imagenet_val, not a patchml build",
        ),
        "table2: corrupt build_info.json": Case(
            lambda w: ["patchml", "table2", str(w.corrupt_info)], r"build_info.json: not valid JSON"
        ),
        "grid: not a patchml build": Case(
            lambda w: ["patchml", "grid", str(w.dataset), "--out", str(w.root / "p.png")],
            r"imagenet_val-1.0.0 is not a patchml folder with the images config",
        ),
        "materialise: --num-proc huge": Case(
            lambda w: [
                "patchml",
                "materialise",
                str(w.dataset),
                "--input",
                str(w.dataset),
                "--num-proc",
                HUGE,
                "--out",
                str(w.root / "m4"),
            ],
            r"--num-proc must be at most 512 .*, got 1,000,000,000$",
        ),
        "grid: --per-k huge": Case(
            lambda w: ["patchml", "grid", str(w.dataset), "--out", str(w.root / "p.png"), "--per-k", HUGE],
            r"--per-k must be at most 100 \(composites of each k: .*\), got 1,000,000,000$",
        ),
        "predictions: --examples huge": Case(
            lambda w: [
                "patchml",
                "predictions",
                str(w.dataset),
                "--outputs",
                str(w.a_file),
                "--out",
                str(w.root / "f8.png"),
                "--examples",
                HUGE,
            ],
            r"--examples must be at most 100 \(composites drawn: .*\), got 1,000,000,000$",
        ),
        "predictions: not a patchml folder": Case(
            lambda w: [
                "patchml",
                "predictions",
                str(w.dataset),
                "--outputs",
                str(w.a_file),
                "--out",
                str(w.root / "f8.png"),
            ],
            r"is not a patchml folder with the images config$",
        ),
        "grid: --per-k 0": Case(
            lambda w: ["patchml", "grid", str(w.dataset), "--out", str(w.root / "p.png"), "--per-k", "0"],
            r"argument --per-k: expected a positive integer",
            usage=True,
        ),
    },
    "perturbations": {
        "image is a text file": Case(
            lambda w: ["perturbations", "grid", str(w.a_file), str(w.root / "g1.png")],
            r"a-file.txt: not a readable image \(UnidentifiedImageError",
        ),
        "truncated JPEG": Case(
            lambda w: ["perturbations", "grid", str(w.truncated_jpeg), str(w.root / "g2.png")],
            r"truncated.JPEG: not a readable image \(OSError: image file is truncated",
        ),
        "missing image": Case(
            lambda w: ["perturbations", "grid", str(w.root / "none.jpg"), str(w.root / "g3.png")],
            r"none.jpg: No such file or directory",
        ),
        "unknown corruption": Case(
            lambda w: ["perturbations", "grid", str(w.truncated_jpeg), str(w.root / "g4.png"), "--corruption", "fogg"],
            r"--corruption fogg: unknown; expected one of",
        ),
        "frost without --frost-dir": Case(
            lambda w: ["perturbations", "grid", str(w.truncated_jpeg), str(w.root / "g5.png"), "--corruption", "frost"],
            r"--corruption frost needs --frost-dir",
        ),
        "--frost-dir without the pictures": Case(
            lambda w: [
                "perturbations",
                "grid",
                str(w.truncated_jpeg),
                str(w.root / "g6.png"),
                "--frost-dir",
                str(w.root),
            ],
            r"--frost-dir .*: frost1.png is missing",
        ),
        "--cell 5": Case(
            lambda w: ["perturbations", "grid", str(w.a_file), str(w.root / "g7.png"), "--cell", "5"],
            r"argument --cell: expected a whole number of pixels in 16..224",
            usage=True,
        ),
    },
}


class PublicHub(http.server.BaseHTTPRequestHandler):
    """The Hub's repo-info endpoint: ``org/public-set`` exists and is public; anything else is not found."""

    def do_GET(self):
        if self.path.split("?")[0].rstrip("/") == "/api/datasets/org/public-set":
            body, status, headers = json.dumps({"id": "org/public-set", "private": False, "sha": "0" * 40}), 200, {}
        else:
            body, status, headers = json.dumps({"error": "Repository not found"}), 404, {"X-Error-Code": "RepoNotFound"}
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def do_POST(self):
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def world(tmp_path_factory, val_images):
    world = World(tmp_path_factory.mktemp("bad-inputs"), val_images)
    hub = http.server.ThreadingHTTPServer(("127.0.0.1", 0), PublicHub)
    threading.Thread(target=hub.serve_forever, daemon=True).start()
    world.hub_env = {
        "HF_ENDPOINT": f"http://127.0.0.1:{hub.server_address[1]}",
        "HF_HUB_OFFLINE": "0",
        "HF_TOKEN": "hf_not_a_real_token",
    }
    yield world
    hub.shutdown()


@pytest.mark.parametrize(("command", "case"), [(c, n) for c, cases in CASES.items() for n in cases])
def test_bad_input_is_one_line_and_exit_code_2(world, command, case, capsys, monkeypatch):
    row = CASES[command][case]
    if row.no_cuda:
        import torch

        monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    args = row.args(world) + (["--no-progress"] if command in ("build", "verify") else [])  # bars are not errors
    if row.env:  # the environment is read when a library is imported (the Hub's endpoint): a fresh process
        result = run_cli(*args, check=False, env=row.env(world))
        returncode, stderr = result.returncode, result.stderr
    else:
        returncode, stderr = run_in_process(args, capsys)
    lines = stderr.strip().splitlines()
    assert returncode == 2, stderr
    assert "Traceback" not in stderr
    if row.usage:  # argparse: the usage (wrapped over lines), then one error line (named after the subcommand if any)
        assert lines[0].startswith("usage: imagenet-suite") and re.match(
            rf"imagenet-suite {command}( [\w-]+)?: error: ", lines[-1]
        ), stderr
    else:
        assert len(lines) == 1 and lines[0].startswith(f"imagenet-suite {command}: error: "), stderr
    assert re.search(row.expect, lines[-1]), f"{lines[-1]!r} does not match {row.expect!r}"


def run_in_process(args: list[str], capsys) -> tuple[int, str]:
    """``cli.main(args)`` in this process: its exit code (argparse's ``SystemExit`` included) and stderr.

    Any exception other than the CLI's own handling escapes and fails the test with its traceback,
    which is exactly what a user would otherwise have seen.
    """
    from imagenet_suite import cli

    capsys.readouterr()
    try:
        returncode = cli.main(args)
    except SystemExit as exit_:
        returncode = exit_.code if isinstance(exit_.code, int) else 2
    return returncode, capsys.readouterr().err


def test_subprocess_smoke_one_line_error_from_the_console_entry_point(world):
    """The real process path (interpreter start, entry point, exit status) on one file error and one usage error."""
    result = run_cli("score", str(world.a_file), "--outputs", str(world.outputs), check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("imagenet-suite score: error: ")
    result = run_cli("build", "imagenet_val", "--num-proc", "zero", check=False)
    assert result.returncode == 2 and result.stderr.startswith("usage: imagenet-suite")


def test_every_command_has_a_table():
    from imagenet_suite import commands

    names = {m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")}
    assert names - {"list"} <= set(CASES), "every command that takes input has a table here (list takes none)"


def test_build_side_library_errors_name_parameters_not_flags():
    """A ``raise`` of the build side names parameters (``errors.param``), never a flag; ``dataset/hub.py`` (push)
    aside, whose ``--public`` is the inverse of ``push_folder(private=...)``."""
    flag = re.compile(r"(?<![\w-])--[a-z]")
    roots = [REPO_ROOT / "imagenet_suite" / p for p in ("core", "dataset", "images", "perturbations")]
    found = []
    for path in sorted(
        p for root in (*roots, REPO_ROOT / "hierarchies", REPO_ROOT / "builders") for p in root.rglob("*.py")
    ):
        if path.name == "hub.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                found += [
                    f"{path.relative_to(REPO_ROOT)}:{part.lineno}: {part.value.strip()}"
                    for part in ast.walk(node.exc)
                    if isinstance(part, ast.Constant)
                    and isinstance(part.value, str)
                    and flag.search(re.sub(r"`[^`]*`", "", part.value))  # a command to run, in backticks, may
                ]
    assert not found, "library errors name flags:\n" + "\n".join(found)


def test_build_writes_every_build_option_as_its_flag():
    """Each field of BuildOptions an error may name is written as the flag of ``build`` that sets it."""
    from dataclasses import fields

    from imagenet_suite.cli import build_parser
    from imagenet_suite.commands._flags import FLAGS
    from imagenet_suite.core.options import BuildOptions
    from imagenet_suite.errors import ConfigError, param

    flags = getattr(build_parser().parse_args(["build", "x", "--out", "o"]), FLAGS).mapping()
    no_flag = {"cache_dir", "progress", "transform"}  # none, --no-progress, --decisions: never named by an error
    assert {f.name: flags.get(f.name, "")[:2] for f in fields(BuildOptions) if f.name not in no_flag} == {
        f.name: "--" for f in fields(BuildOptions) if f.name not in no_flag
    }
    assert (flags["out_dir"], flags["inputs"], flags["builder_options"]) == ("--out", "--input", "--option")
    err = ConfigError(f"{param('ray_address')} is only used with {param('executor')} ray")
    assert err.with_flags(flags) == "--ray-address is only used with --executor ray"


# -- disk full ----------------------------------------------------------------------------------------------


def _can_mount_tmpfs() -> bool:
    probe = subprocess.run(
        [
            "unshare",
            "--mount",
            "--map-root-user",
            "sh",
            "-c",
            "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d && umount $d && rmdir $d",
        ],
        capture_output=True,
    )
    return shutil.which("unshare") is not None and probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs unshare + tmpfs in a user/mount namespace (Linux)")
def test_disk_full_is_one_line_leaves_no_incomplete_files_and_resumes(tmp_path):
    rng = np.random.default_rng(3)
    images = []
    for i in range(8):  # incompressible ~33 KB images, two per shard: the disk fills up at the third shard
        noise = rng.integers(0, 256, (128, 128, 3), dtype=np.uint8)
        buffer = io.BytesIO()
        Image.fromarray(noise).save(buffer, format="JPEG", quality=100)
        images.append(fx.ValImage(f"ILSVRC2012_val_{i + 1:08d}", buffer.getvalue(), i * 7, [(0, 0, 5, 5)]))
    manual = fx.write_folders_layout(tmp_path / "manual", images)
    fresh = build_dataset(
        "imagenet_val", tmp_path / "fresh", options=BuildOptions(manual_dir=manual, shard_size=2, progress=False)
    )
    mount, report = tmp_path / "small-disk", tmp_path / "report"
    mount.mkdir()
    report.mkdir()
    build = (
        f"{sys.executable} -m imagenet_suite.cli build imagenet_val --manual-dir {manual} --out {mount}/out "
        "--shard-size 2 --no-progress"
    )
    script = (
        f"mount -t tmpfs -o size=300k tmpfs {mount} && "  # room for two of the four ~100 KB shards
        f"{build} > {report}/first.out 2> {report}/first.err; echo $? > {report}/first.code; "
        f"find {mount} -type f | sort > {report}/files.txt; "
        f"mount -o remount,size=20m {mount} && {build} > {report}/second.out 2> {report}/second.err; "
        f"echo $? > {report}/second.code; cp -r {mount}/out {report}/out"
    )
    subprocess.run(
        ["unshare", "--mount", "--map-root-user", "sh", "-c", script],
        check=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        timeout=600,
    )

    first_error = (report / "first.err").read_text().strip().splitlines()
    assert (report / "first.code").read_text().strip() == "2", first_error
    assert len(first_error) == 1 and "No space left on device" in first_error[0] and "disk full" in first_error[0]
    left = (report / "files.txt").read_text().splitlines()
    assert not [f for f in left if f.endswith(".incomplete")], left
    assert [f for f in left if f.endswith(".parquet")], "the shards finished before the disk filled up are kept"
    assert (report / "second.code").read_text().strip() == "0", (report / "second.err").read_text()
    assert folder_bytes(report / "out" / fresh.name) == folder_bytes(fresh)
