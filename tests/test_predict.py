"""``imagenet-suite predict``: a model's outputs on a built split, equal to the model's own eval path.

The dataset is a real ``imagenet_val`` build from the val/<wnid>/ layout (grayscale and CMYK JPEGs
included), split into 3 shards so that resuming has row groups to skip.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import io
import logging
import textwrap
from pathlib import Path

import pytest
import torch
from PIL import Image

from imagenet_suite.cli import main
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.inference import load_model
from imagenet_suite.inference.predict import protocol_transform, split_units
from imagenet_suite.scoring import ModelOutputs, score
from imagenet_suite.scoring.metrics.ood_detector_stats import Embeddings
from tests.fixtures.imagenet_layouts import make_val_images, write_folders_layout

ROWS = 10


@pytest.fixture(scope="module")
def val(tmp_path_factory):
    root = tmp_path_factory.mktemp("predict")
    manual = write_folders_layout(root / "manual", make_val_images(ROWS))
    folder = build_dataset(
        "imagenet_val", root / "out", ["default"], options=BuildOptions(manual_dir=manual, shard_size=4, progress=False)
    )
    return DatasetFolder(folder)


def reference_logits(model: torch.nn.Module, folder: DatasetFolder, transform) -> dict[str, torch.Tensor]:
    """timm's validate.py path, one image at a time: PIL decode to RGB, the eval transform, forward."""
    table = folder.read_table("default", "validation", ["id", "image"])
    expected = {}
    with torch.inference_mode():
        for row_id, image in zip(table.column("id").to_pylist(), table.column("image").to_pylist()):
            picture = Image.open(io.BytesIO(image["bytes"])).convert("RGB")
            expected[row_id] = model(transform(picture)[None])[0]
    return expected


def run(*argv: str) -> int:
    """predict in-process, on the CPU unless the test names a device (a CUDA machine's default is cuda)."""
    device = () if "--device" in argv else ("--device", "cpu")
    return main(["predict", *argv, *device, "--no-progress", "--workers", "0"])


def test_timm_model_with_a_weights_file_gives_timm_eval_logits(val, tmp_path):
    import timm
    from safetensors.torch import save_file
    from timm.data import create_transform, resolve_data_config

    torch.manual_seed(1)
    model = timm.create_model("test_resnet", pretrained=False).eval()
    save_file(model.state_dict(), str(tmp_path / "w.safetensors"))
    out = tmp_path / "val.pt"
    assert (
        run(
            str(val.path),
            "--model",
            "timm:test_resnet",
            "--weights",
            str(tmp_path / "w.safetensors"),
            "--out",
            str(out),
            "--batch-size",
            "3",
        )
        == 0
    )
    outputs = ModelOutputs.load(out)
    assert (
        len(outputs.ids) == ROWS and outputs.num_classes == 1000 and len(val.split_files("default", "validation")) == 3
    )
    expected = reference_logits(model, val, create_transform(**resolve_data_config({}, model=model)))
    worst = max(float((outputs.values[i] - expected[row_id]).abs().max()) for i, row_id in enumerate(outputs.ids))
    assert worst < 2e-3
    assert list(outputs.ids) == val.read_table("default", "validation", ["id"]).column("id").to_pylist()
    assert score(val.path, outputs, metrics=["topk_accuracy"]).value("top1_accuracy") >= 0  # score reads it unchanged

    parallel = tmp_path / "parallel.pt"
    argv = ["--model", "timm:test_resnet", "--weights", str(tmp_path / "w.safetensors"), "--batch-size", "3"]
    argv += ["--out", str(parallel), "--workers", "2", "--device", "cpu", "--no-progress"]
    assert main(["predict", str(val.path), *argv]) == 0
    assert torch.equal(torch.load(parallel, weights_only=True)["logits"], torch.load(out, weights_only=True)["logits"])


def test_batches_are_consecutive_rows_across_row_groups_and_shards(val):
    units = split_units(val, "default", "validation", 3)
    assert [unit.rows for unit in units] == [3, 3, 3, 1]
    shards = [str(path) for path in val.split_files("default", "validation")]  # 4 + 4 + 2 rows
    assert [(shards.index(p.path), p.offset, p.length) for p in units[1].pieces] == [(0, 3, 1), (1, 0, 2)]
    assert sum(p.length for unit in units for p in unit.pieces) == ROWS


def test_module_callable_model_from_a_file_with_features(val, tmp_path):
    from timm.data import create_transform, resolve_data_config

    (tmp_path / "tiny.py").write_text(
        textwrap.dedent("""
        from torch import nn

        def make():
            return nn.Sequential(nn.Conv2d(3, 8, 3, stride=4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                 nn.Linear(8, 1000))
    """)
    )
    out = tmp_path / "tiny.pt"
    spec = f"{tmp_path / 'tiny.py'}:make"
    assert run(str(val.path), "--model", spec, "--weights", "none", "--seed", "3", "--out", str(out), "--features") == 0
    loaded = load_model(spec, "none", seed=3)
    outputs, features = ModelOutputs.load(out), Embeddings.load(out)
    expected = reference_logits(loaded.model, val, create_transform(**resolve_data_config({}, model=loaded.model)))
    assert max(float((outputs.values[i] - expected[r]).abs().max()) for i, r in enumerate(outputs.ids)) < 2e-3
    head = loaded.model[-1]
    assert features.values.shape == (ROWS, 8) and features.ids == outputs.ids
    assert torch.allclose(head(features.values), outputs.values, atol=1e-5)  # the classifier's own input


@pytest.mark.parametrize(
    ("model", "weights", "message"),
    [
        ("resnet50", None, "is not one of timm:<name>"),
        ("timm:not_a_model_xyz", "none", "timm has no model 'not_a_model_xyz'"),
        ("torchvision:not_a_model", "none", "torchvision has no model 'not_a_model'"),
        ("no_such_module_xyz:make", "none", "cannot import module 'no_such_module_xyz'"),
        ("missing/file.py:make", "none", "file missing/file.py does not exist"),
        ("timm:test_resnet", "missing.safetensors", "weights file missing.safetensors does not exist"),
        ("torch.nn:Linear", "none", "Linear() failed (TypeError"),  # imports, but needs arguments
    ],
)
def test_bad_model_strings_and_weights_are_one_line_errors(val, tmp_path, capsys, model, weights, message):
    argv = [str(val.path), "--model", model, "--out", str(tmp_path / "o.pt")]
    if weights:
        argv += ["--weights", weights]
    code = run(*argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_a_callable_that_is_no_model_or_fails_is_named(val, tmp_path, capsys):
    (tmp_path / "bad.py").write_text("def make():\n    return 3\n\ndef broken():\n    raise ValueError('nope')\n")
    for name, message in (("make", "returned 'int', not a torch nn.Module"), ("broken", "broken() failed")):
        code = run(
            str(val.path),
            "--model",
            f"{tmp_path / 'bad.py'}:{name}",
            "--weights",
            "none",
            "--out",
            str(tmp_path / "o.pt"),
        )
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_weights_of_another_architecture_are_refused_naming_the_keys(val, tmp_path, capsys):
    import timm

    torch.save(timm.create_model("test_vit").state_dict(), tmp_path / "vit.pth")
    code = run(
        str(val.path),
        "--model",
        "timm:test_resnet",
        "--weights",
        str(tmp_path / "vit.pth"),
        "--out",
        str(tmp_path / "o.pt"),
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "does not fit model 'timm:test_resnet'" in err and "missing keys" in err and "unexpected keys" in err


COUNTING_MODEL = """
import os
from pathlib import Path
import torch
from torch import nn

class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(3, 1000)

    def forward(self, x):
        log = Path(os.environ["PREDICT_CALLS"])
        calls = int(log.read_text() or 0) + 1 if log.exists() else 1
        log.write_text(str(calls))
        if calls == int(os.environ.get("PREDICT_CRASH_AT", 0)):
            raise KeyboardInterrupt
        return self.head(x.mean(dim=(2, 3)))

def make():
    return Counting()
"""


def test_an_interrupted_run_is_completed_not_recomputed(val, tmp_path, monkeypatch):
    (tmp_path / "counting.py").write_text(COUNTING_MODEL)
    spec = f"{tmp_path / 'counting.py'}:make"
    calls = tmp_path / "calls"
    monkeypatch.setenv("PREDICT_CALLS", str(calls))
    whole = tmp_path / "whole.pt"
    assert run(str(val.path), "--model", spec, "--weights", "none", "--out", str(whole), "--batch-size", "4") == 0
    assert calls.read_text() == "3"  # one forward per row group (4 + 4 + 2 rows)

    calls.unlink()
    monkeypatch.setenv("PREDICT_CRASH_AT", "3")
    out = tmp_path / "resumed.pt"
    argv = [str(val.path), "--model", spec, "--weights", "none", "--out", str(out), "--batch-size", "4"]
    assert run(*argv) == 130  # interrupted in the third forward
    assert not out.exists() and len(list((tmp_path / "resumed.pt.partial").glob("unit_*.pt"))) == 2
    calls.unlink()
    monkeypatch.delenv("PREDICT_CRASH_AT")
    assert run(*argv) == 0
    assert calls.read_text() == "1"  # only the missing row group
    first, second = torch.load(whole, weights_only=True), torch.load(out, weights_only=True)
    assert first["ids"] == second["ids"] and torch.equal(first["logits"], second["logits"])
    assert not (tmp_path / "resumed.pt.partial").exists()


def test_a_partial_run_of_another_model_is_refused(val, tmp_path, monkeypatch, capsys):
    (tmp_path / "counting.py").write_text(COUNTING_MODEL)
    monkeypatch.setenv("PREDICT_CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("PREDICT_CRASH_AT", "2")
    spec = f"{tmp_path / 'counting.py'}:make"
    argv = [str(val.path), "--model", spec, "--out", str(tmp_path / "o.pt"), "--batch-size", "4", "--weights"]
    assert run(*argv, "none") == 130
    assert run(*argv, "none", "--seed", "1") == 2
    assert "holds partial outputs of a different run (differs in ['weights'])" in capsys.readouterr().err


def _interrupted_after_two_batches(val, tmp_path, monkeypatch) -> tuple[list[str], Path]:
    """A counting model's run stopped in its third forward: two of three chunks in ``<out>.partial/``;
    returns the arguments that resume it and the clean run's outputs file."""
    (tmp_path / "counting.py").write_text(COUNTING_MODEL)
    spec = f"{tmp_path / 'counting.py'}:make"
    monkeypatch.setenv("PREDICT_CALLS", str(tmp_path / "calls"))
    clean = tmp_path / "clean.pt"
    assert run(str(val.path), "--model", spec, "--weights", "none", "--out", str(clean), "--batch-size", "4") == 0
    (tmp_path / "calls").unlink()
    monkeypatch.setenv("PREDICT_CRASH_AT", "3")
    argv = [str(val.path), "--model", spec, "--weights", "none", "--out", str(tmp_path / "o.pt"), "--batch-size", "4"]
    assert run(*argv) == 130
    (tmp_path / "calls").unlink()
    monkeypatch.delenv("PREDICT_CRASH_AT")
    return argv, clean


def _truncated(chunk: Path) -> None:
    chunk.write_bytes(chunk.read_bytes()[: chunk.stat().st_size // 2])


def _rows_of_another_batch(chunk: Path) -> None:
    other = torch.load(chunk.with_name("unit_0000001.pt"), weights_only=True)
    torch.save(other, chunk)


def _two_rows_short(chunk: Path) -> None:
    data = torch.load(chunk, weights_only=True)
    torch.save({"ids": data["ids"][:2], "logits": data["logits"][:2]}, chunk)


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda chunk: chunk.write_bytes(b""), "not a readable torch file"),
        (_truncated, "not a readable torch file"),
        (_two_rows_short, "holds 2 rows, expected the batch's 4"),
        (_rows_of_another_batch, "holds the rows of another batch"),
    ],
)
def test_a_corrupt_chunk_of_an_interrupted_run_is_named_set_aside_and_recomputed(
    val, tmp_path, monkeypatch, caplog, damage, problem
):
    argv, clean = _interrupted_after_two_batches(val, tmp_path, monkeypatch)
    partial = tmp_path / "o.pt.partial"
    chunk = partial / "unit_0000000.pt"
    damage(chunk)
    damaged = chunk.read_bytes()
    caplog.clear()

    assert run(*argv) == 0
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]  # stderr, outside pytest
    assert len(warned) == 1 and len(warned[0].splitlines()) == 1 and f"{chunk}: {problem}" in warned[0], warned
    assert f"moved to {chunk}.rejected" in warned[0] and "recomputed" in warned[0]
    assert (tmp_path / "calls").read_text() == "2"  # the rejected batch and the missing one
    first, second = torch.load(clean, weights_only=True), torch.load(tmp_path / "o.pt", weights_only=True)
    assert first["ids"] == second["ids"] and torch.equal(first["logits"], second["logits"])
    assert (partial / "unit_0000000.pt.rejected").read_bytes() == damaged  # set aside, not deleted
    assert sorted(p.name for p in partial.iterdir()) == ["unit_0000000.pt.rejected"]


def test_an_unreadable_resume_manifest_is_one_line_naming_it(val, tmp_path, monkeypatch, capsys):
    argv, _ = _interrupted_after_two_batches(val, tmp_path, monkeypatch)
    manifest = tmp_path / "o.pt.partial" / "manifest.json"
    manifest.write_bytes(manifest.read_bytes()[:20])
    capsys.readouterr()
    assert run(*argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{manifest}: not a readable manifest" in err, err
    assert len(list((tmp_path / "o.pt.partial").glob("unit_*.pt"))) == 2  # kept: nothing is deleted


def test_bad_loader_arguments_are_refused_before_any_work_and_leave_nothing(val, tmp_path):
    from imagenet_suite.errors import ConfigError
    from imagenet_suite.inference import PredictOptions, predict
    from imagenet_suite.inference.predict import check_loader_arguments

    loaded = load_model("timm:test_resnet", "none")
    for kwargs, message in (
        ({"workers": -1}, "^workers must be 0 or more, got -1"),
        ({"batch_size": 0}, "^batch_size must be at least 1, got 0"),
    ):
        with pytest.raises(ConfigError, match=message) as refused:
            PredictOptions(progress=False, **kwargs)
        assert refused.value.parameters == tuple(kwargs)  # the CLI writes them as its flags
        with pytest.raises(ConfigError, match=message):
            check_loader_arguments(**{"workers": None, "batch_size": 1, **kwargs})
    (tmp_path / "folder.pt").mkdir()
    with pytest.raises(ConfigError, match="^out .*folder.pt: is a folder"):
        predict(val, loaded, tmp_path / "folder.pt", options=PredictOptions(progress=False, workers=0))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.pt"]
    check_loader_arguments(workers=None, batch_size=1)
    check_loader_arguments(workers=0, batch_size=256)


def test_protocol_steps_border_crop_first_and_patchml_without_centre_crop():
    loaded = load_model("timm:test_resnet", "none")
    seen = []
    transform = protocol_transform(loaded, {"border_crop_px": 2}, lambda image: seen.append(image.size) or 0)
    transform(Image.new("RGB", (40, 30)))
    assert seen == [(36, 26)]  # 2 px off every side, before the model's preprocessing
    squash = protocol_transform(
        loaded,
        {"preprocessing": "resize the whole composite to the model input, no center crop (Anzaku et al. 2024, App. B)"},
        None,
    )
    wide = Image.new("RGB", (400, 100), (255, 0, 0))
    wide.paste((0, 0, 255), (0, 0, 20, 100))  # a blue strip at the left edge: a centre crop would cut it off
    pixels = squash(wide)
    assert pixels.shape == (3, 160, 160) and pixels[2, :, 0].mean() > pixels[0, :, 0].mean()
    cropped = protocol_transform(loaded, {}, None)(wide)
    assert cropped[2, :, 0].mean() < cropped[0, :, 0].mean()  # the default eval transform does crop it away


def test_amp_on_the_cpu_stays_close_to_float32(val, tmp_path):
    """--amp autocasts to bfloat16 on the CPU (float16 on CUDA); logits are stored as float32."""
    from imagenet_suite.inference import PredictOptions, predict

    loaded = load_model("timm:test_resnet", "none", seed=2)
    options = PredictOptions(workers=0, batch_size=5, progress=False)
    plain = predict(val, loaded, tmp_path / "fp32.pt", options=options)
    mixed = predict(val, loaded, tmp_path / "amp.pt", options=dataclasses.replace(options, amp=True))
    plain, mixed = (torch.load(path, weights_only=True) for path in (plain, mixed))
    assert mixed["logits"].dtype == torch.float32 and mixed["ids"] == plain["ids"]
    assert not torch.equal(mixed["logits"], plain["logits"])  # autocast really ran in bfloat16
    assert torch.allclose(mixed["logits"], plain["logits"], atol=0.15, rtol=0.05)


# -- the GPU decode path ----------------------------------------------------------------------------
# Tolerance: on the CPU, torchvision's decode_jpeg and Pillow are both libjpeg-turbo, so the decoded
# pixels are identical; the tensor preprocessing resizes in float32 (antialiased, rounded to levels as
# PIL's 8-bit resize is) where PIL uses fixed-point weights, so a pixel may land one level (1/255)
# apart. Measured: max 1 level, mean 0.1-0.2 levels, over every config below.
LEVELS = 1.0 + 1e-3  # float32 slack of un-normalizing


def smooth_jpeg(width: int, height: int, seed: int = 0, **options) -> bytes:
    """A photo-like JPEG: a smooth random field plus mild noise (ImageNet-like spectra)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, size=(max(2, height // 8), max(2, width // 8), 3), dtype=np.uint8)
    picture = Image.fromarray(small).resize((width, height), Image.BILINEAR)
    noisy = np.clip(np.asarray(picture, dtype=np.int16) + rng.normal(0, 6, (height, width, 3)), 0, 255)
    buffer = io.BytesIO()
    Image.fromarray(noisy.astype(np.uint8)).save(buffer, format="JPEG", quality=90, **options)
    return buffer.getvalue()


def encoded(image: Image.Image, **options) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, **({"format": "JPEG", "quality": 90} | options))
    return buffer.getvalue()


@functools.cache
def device_fixtures() -> list[bytes]:
    """Baseline 4:2:0 JPEGs of several sizes and aspect ratios, progressive, 4:4:4 and 4:2:2."""
    sizes = [(500, 375), (375, 500), (64, 48), (1000, 100), (33, 200), (160, 160), (121, 89)]
    jpegs = [smooth_jpeg(w, h, seed=i) for i, (w, h) in enumerate(sizes)]
    jpegs += [smooth_jpeg(300, 200, 7, progressive=True), smooth_jpeg(300, 200, 8, subsampling=0)]
    return [*jpegs, smooth_jpeg(200, 300, 9, subsampling=1)]


def levels_apart(got: torch.Tensor, expected: torch.Tensor, std) -> torch.Tensor:
    """|difference| of two normalized batches in 8-bit levels."""
    return ((got - expected) * torch.tensor(std)[:, None, None] * 255).abs()


@functools.cache
def eval_transforms() -> dict[str, object]:
    import torchvision
    from timm.data import create_transform, resolve_data_config

    base = resolve_data_config({}, model=load_model("timm:test_resnet", "none").model)
    configs = {
        "timm default (bilinear, crop_pct 0.95)": base,
        "bicubic, ImageNet mean/std, 224 crop 0.875": {
            **base,
            "interpolation": "bicubic",
            "input_size": (3, 224, 224),
            "crop_pct": 0.875,
            "mean": (0.485, 0.456, 0.406),
            "std": (0.229, 0.224, 0.225),
        },
        "non-square input": {**base, "input_size": (3, 160, 192)},
        "squash (PatchML)": {**base, "crop_pct": 1.0, "crop_mode": "squash"},
        "border mode": {**base, "crop_mode": "border"},
    }
    transforms = {name: create_transform(**config) for name, config in configs.items()}
    transforms["torchvision weights preset"] = torchvision.models.get_model_weights("resnet18").DEFAULT.transforms()
    transforms.update(open_clip_transforms())
    return transforms


def open_clip_transforms() -> dict[str, object]:
    """open_clip's eval transforms (preprocess_val) of a CLIP tag (shortest side, bicubic) and of SigLIP (squash);
    none without the zeroshot extra."""
    if importlib.util.find_spec("open_clip") is None:
        return {}
    from open_clip.transform import PreprocessCfg, image_transform_v2

    return {
        f"open_clip {mode}": image_transform_v2(PreprocessCfg(size=96, resize_mode=mode), is_train=False)
        for mode in ("shortest", "squash")
    }


@pytest.mark.parametrize("border", [0, 2])
@pytest.mark.parametrize("name", list(eval_transforms()))
def test_tensor_preprocessing_matches_the_pil_transform(name, border):
    from imagenet_suite.inference.gpu_decode import decode_jpegs, tensor_transform
    from imagenet_suite.scoring.metrics.protocols import border_crop

    transform = eval_transforms()[name]
    preprocess = tensor_transform(transform, border)
    jpegs = device_fixtures()
    got = preprocess(decode_jpegs([torch.frombuffer(bytearray(d), dtype=torch.uint8) for d in jpegs], "cpu"))
    pictures = [Image.open(io.BytesIO(data)).convert("RGB") for data in jpegs]
    expected = torch.stack([transform(border_crop(p, border) if border else p) for p in pictures])
    assert got.shape == expected.shape and got.dtype == torch.float32
    apart = levels_apart(got, expected, preprocess.std)
    assert apart.max() <= LEVELS and apart.mean() < 0.35, (float(apart.max()), float(apart.mean()))
    if got.shape[-1] == 160:  # a tiny model sees the same images
        model = load_model("timm:test_resnet", "none", seed=4).model
        with torch.inference_mode():
            ours, theirs = model(got), model(expected)
        ratio = float((ours - theirs).abs().max()) / float(theirs.std())
        assert ratio < 0.02, ratio  # measured: at most 0.002 of the logits' spread


def open_clip_longest():
    """open_clip's ``resize_mode="longest"`` eval transform (its own ResizeKeepRatio and CenterCropOrPad)."""
    from open_clip.transform import PreprocessCfg, image_transform_v2

    return image_transform_v2(PreprocessCfg(size=64, resize_mode="longest"), is_train=False)


def test_preprocessing_without_a_tensor_counterpart_is_refused():
    from torchvision import transforms

    from imagenet_suite.inference.gpu_decode import UnsupportedTransform, tensor_transform

    for transform, named in (
        (lambda image: image, "is not a torchvision Compose"),
        (
            transforms.Compose([transforms.Resize(8, transforms.InterpolationMode.NEAREST), transforms.ToTensor()]),
            "only bilinear and bicubic",
        ),
        (transforms.Compose([transforms.Grayscale(3), transforms.ToTensor()]), "Grayscale"),
        (transforms.Compose([transforms.Resize(8)]), "does not end in ToTensor"),
        *([(open_clip_longest(), "ResizeKeepRatio")] if importlib.util.find_spec("open_clip") else []),
    ):
        with pytest.raises(UnsupportedTransform, match=named):
            tensor_transform(transform)


@functools.cache
def kinds() -> dict[str, bytes]:
    rgb = Image.open(io.BytesIO(smooth_jpeg(48, 40))).convert("RGB")
    return {
        "jpeg ycbcr 4:2:0": encoded(rgb),
        "jpeg ycbcr progressive": encoded(rgb, progressive=True),
        "jpeg ycbcr 4:4:4": encoded(rgb, subsampling=0),
        "jpeg grayscale": encoded(rgb.convert("L")),
        "jpeg cmyk": encoded(rgb.convert("CMYK")),
        "jpeg rgb-coded": encoded(rgb, keep_rgb=True),  # component ids 'R','G','B': libjpeg does no YCbCr->RGB
        "png": encoded(rgb, format="PNG"),
        "png grayscale": encoded(rgb.convert("L"), format="PNG"),
    }


def test_the_image_kind_is_read_from_the_headers():
    from imagenet_suite.images import jpeg_frame
    from imagenet_suite.inference.gpu_decode import device_decodable

    found = {
        name: (device_decodable(data), getattr(jpeg_frame(data), "color_space", None)) for name, data in kinds().items()
    }
    assert found == {
        "jpeg ycbcr 4:2:0": (True, "YCbCr"),
        "jpeg ycbcr progressive": (True, "YCbCr"),
        "jpeg ycbcr 4:4:4": (True, "YCbCr"),
        "jpeg grayscale": (False, "L"),
        "jpeg cmyk": (False, "CMYK"),
        "jpeg rgb-coded": (False, "RGB"),
        "png": (False, None),
        "png grayscale": (False, None),
    }
    for name, data in kinds().items():  # agrees with Pillow's reading of the same header
        with Image.open(io.BytesIO(data)) as opened:
            assert (opened.format == "JPEG" and opened.mode == "RGB") == (found[name][1] in ("YCbCr", "RGB")), name
    frame = jpeg_frame(kinds()["jpeg ycbcr progressive"])
    assert frame.marker == 0xC2 and frame.components == ((1, 2, 2), (2, 1, 1), (3, 1, 1))
    cmyk = bytearray(kinds()["jpeg cmyk"])
    transform_flag = cmyk.index(b"Adobe") + 11  # Adobe APP14: transform 0 = CMYK as stored, 2 = YCCK
    assert cmyk[transform_flag] == 0
    cmyk[transform_flag] = 2
    assert jpeg_frame(bytes(cmyk)).color_space == "YCCK" and not device_decodable(bytes(cmyk))
    ycbcr = bytearray(kinds()["jpeg ycbcr 4:4:4"])
    ycbcr[ycbcr.index(b"JFIF\x00")] = ord("X")  # no JFIF marker: libjpeg goes by the component ids (1, 2, 3)
    assert jpeg_frame(bytes(ycbcr)).color_space == "YCbCr"
    assert jpeg_frame(kinds()["jpeg ycbcr 4:2:0"][:300]) is None  # no scan header: not read as decodable


def test_a_jpeg_over_pillows_pixel_bound_takes_the_cpu_path(monkeypatch):
    from imagenet_suite.inference.gpu_decode import device_decodable
    from tests.test_trust_images import with_frame_size

    data = kinds()["jpeg ycbcr 4:2:0"]
    with Image.open(io.BytesIO(data)) as opened:
        pixels = opened.width * opened.height
    assert device_decodable(with_frame_size(data, 30000, 30000)) is False  # a bomb: Pillow's path refuses it
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", pixels - 1)
    assert device_decodable(data) is False
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", pixels)
    assert device_decodable(data) is True
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)  # the bound lifted, as Pillow allows
    assert device_decodable(with_frame_size(data, 30000, 30000)) is True


def mixed_parquet(path) -> tuple[list[str], list[bytes]]:
    """Two row groups of every kind of image, interleaved."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    names, datas = [], []
    for round_index in range(2):
        for name, data in kinds().items():
            names.append(f"{round_index}:{name}")
            datas.append(data)
    images = [{"bytes": data, "path": f"{i}.img"} for i, data in enumerate(datas)]
    pq.write_table(pa.table({"id": names, "image": images}), path, row_group_size=5)
    return names, datas


def test_a_mixed_batch_is_split_and_put_back_in_dataset_order(tmp_path):
    from imagenet_suite.inference.predict import BatchImages, DeviceInputs, Piece, Unit, device_transform

    names, datas = mixed_parquet(tmp_path / "mixed.parquet")
    path = str(tmp_path / "mixed.parquet")
    unit = Unit(0, len(names), (Piece(path, 0, 1, 4), Piece(path, 1, 0, 5), Piece(path, 2, 0, 5), Piece(path, 3, 0, 1)))
    loaded = load_model("timm:test_resnet", "none")
    transform = protocol_transform(loaded, {}, None)
    preprocess, why_not = device_transform(loaded, {}, None)
    assert why_not == ""
    ids, plain = BatchImages([unit], transform).read(unit)
    split_ids, batch = BatchImages([unit], transform, device_jpegs=True).read(unit)
    assert split_ids == ids == names[1:16]
    on_device = [i for i, row_id in enumerate(ids) if row_id.split(":")[1].startswith("jpeg ycbcr")]
    assert batch.jpeg_at.tolist() == on_device and sorted(on_device + batch.decoded_at.tolist()) == list(range(15))
    assert [bytes(t.numpy()) for t in batch.jpegs()] == [datas[1 + i] for i in on_device]
    assert torch.equal(batch.decoded, plain[batch.decoded_at])  # the worker did exactly the CPU path
    inputs = DeviceInputs(preprocess, transform, torch.device("cpu"))(
        batch.pin_memory() if torch.cuda.is_available() else batch
    )
    assert inputs.shape == plain.shape
    assert torch.equal(inputs[batch.decoded_at], plain[batch.decoded_at])
    assert levels_apart(inputs, plain, preprocess.std).max() <= LEVELS  # every JPEG back at its own row


def test_a_batch_the_decoder_refuses_is_decoded_with_pillow(tmp_path, monkeypatch, caplog):
    import importlib

    from imagenet_suite.inference.predict import BatchImages, DeviceInputs, Piece, Unit, device_transform

    predict_module = importlib.import_module("imagenet_suite.inference.predict")  # the package exports predict()

    mixed_parquet(tmp_path / "mixed.parquet")
    unit = Unit(0, 5, (Piece(str(tmp_path / "mixed.parquet"), 0, 0, 5),))
    loaded = load_model("timm:test_resnet", "none")
    transform = protocol_transform(loaded, {}, None)
    _, batch = BatchImages([unit], transform, device_jpegs=True).read(unit)

    def refuse(data, device):
        raise RuntimeError("nvjpeg: unsupported")

    monkeypatch.setattr(predict_module, "decode_jpegs", refuse)
    inputs = DeviceInputs(device_transform(loaded, {}, None)[0], transform, torch.device("cpu"))
    assert torch.equal(inputs(batch), BatchImages([unit], transform).read(unit)[1])
    inputs(batch)
    assert [r.getMessage() for r in caplog.records if "refused a batch" in r.getMessage()] == [
        "predict: decode_jpeg on cpu refused a batch (nvjpeg: unsupported); such batches are decoded with Pillow"
    ]


def test_gpu_decode_path_on_the_cpu_equals_the_cpu_path_for_fallback_rows(val, tmp_path):
    from imagenet_suite.inference import PredictOptions, predict

    loaded = load_model("timm:test_resnet", "none", seed=5)
    plain = predict(val, loaded, tmp_path / "cpu.pt", options=PredictOptions(workers=0, batch_size=4, progress=False))
    mixed = predict(
        val,
        loaded,
        tmp_path / "gpu.pt",
        options=PredictOptions(workers=2, batch_size=4, progress=False, gpu_decode=True),
    )
    plain, mixed = (torch.load(path, weights_only=True) for path in (plain, mixed))
    assert mixed["ids"] == plain["ids"]
    modes = {}
    for row_id, image in zip(
        *(val.read_table("default", "validation", ["id", "image"]).column(c).to_pylist() for c in ("id", "image"))
    ):
        with Image.open(io.BytesIO(image["bytes"])) as opened:
            modes[row_id] = opened.mode
    fallback = [i for i, row_id in enumerate(plain["ids"]) if modes[row_id] != "RGB"]
    assert len(fallback) == 2  # the grayscale and the CMYK JPEG
    assert torch.equal(mixed["logits"][fallback], plain["logits"][fallback])
    # inputs one level apart here and there: measured max |difference| 0.001 x the logits' spread
    assert torch.allclose(mixed["logits"], plain["logits"], atol=0.02 * float(plain["logits"].std()))
    assert not torch.equal(mixed["logits"], plain["logits"])  # the JPEG rows really took the other path


def test_an_override_keeps_the_cpu_path_and_says_so(val, tmp_path, caplog):
    from timm.data import create_transform, resolve_data_config

    from imagenet_suite.inference import PredictOptions, predict

    loaded = load_model("timm:test_resnet", "none", seed=6)
    override = create_transform(**resolve_data_config({}, model=loaded.model))
    options = PredictOptions(workers=0, batch_size=4, progress=False, transform=override)
    plain = predict(val, loaded, tmp_path / "cpu.pt", options=options)
    asked = predict(val, loaded, tmp_path / "o.pt", options=dataclasses.replace(options, gpu_decode=True))
    assert torch.equal(torch.load(asked, weights_only=True)["logits"], torch.load(plain, weights_only=True)["logits"])
    warned = [r.getMessage() for r in caplog.records if "GPU decode is off" in r.getMessage()]
    assert warned == [
        "predict: GPU decode is off, a transform override has no tensor counterpart; every image is decoded "
        "and preprocessed on the CPU"
    ]


def test_a_partial_run_with_the_other_decode_path_is_refused(val, tmp_path, monkeypatch, capsys):
    (tmp_path / "counting.py").write_text(COUNTING_MODEL)
    monkeypatch.setenv("PREDICT_CALLS", str(tmp_path / "calls"))
    monkeypatch.setenv("PREDICT_CRASH_AT", "2")
    argv = [str(val.path), "--model", f"{tmp_path / 'counting.py'}:make", "--weights", "none", "--batch-size", "4"]
    argv += ["--out", str(tmp_path / "o.pt"), "--device", "cpu"]
    assert run(*argv, "--gpu-decode") == 130
    assert run(*argv) == 2
    assert "holds partial outputs of a different run (differs in ['decode'])" in capsys.readouterr().err


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_nvjpeg_path_on_cuda_is_close_to_the_cpu_path(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from imagenet_suite.inference.predict import BatchImages, DeviceInputs, Piece, Unit, device_transform

    datas = [*device_fixtures(), *kinds().values()]
    path = tmp_path / "photos.parquet"
    images = [{"bytes": data, "path": f"{i}.jpg"} for i, data in enumerate(datas)]
    pq.write_table(pa.table({"id": [str(i) for i in range(len(datas))], "image": images}), path)
    unit = Unit(0, len(datas), (Piece(str(path), 0, 0, len(datas)),))
    loaded = load_model("timm:test_resnet", "none", seed=7)
    transform = protocol_transform(loaded, {}, None)
    _, batch = BatchImages([unit], transform, device_jpegs=True).read(unit)
    _, expected = BatchImages([unit], transform).read(unit)
    got = DeviceInputs(device_transform(loaded, {}, None)[0], transform, torch.device("cuda"))(batch.pin_memory())
    assert got.device.type == "cuda"
    got = got.cpu()
    assert torch.equal(got[batch.decoded_at], expected[batch.decoded_at])
    # nvJPEG's IDCT and chroma upsampling are not libjpeg's: a few levels, more at sharp colour edges
    apart = levels_apart(got, expected, (0.5, 0.5, 0.5))
    assert apart.mean() < 2.0 and apart.max() < 64, (float(apart.mean()), float(apart.max()))
    model = loaded.model.cuda()
    with torch.inference_mode(), torch.backends.cudnn.flags(enabled=True, allow_tf32=False):  # inputs' difference only
        ours, theirs = model(got.cuda()).cpu(), model(expected.cuda()).cpu()
    worst = float((ours - theirs).abs().max())  # H200, torch 2.11: 0.085 of the logits' spread
    assert worst < 0.15 * float(theirs.std()), (worst, float(theirs.std()))
