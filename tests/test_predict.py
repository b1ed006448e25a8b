"""``imagenet-suite predict``: a model's outputs on a built split, equal to the model's own eval path.

The dataset is a real ``imagenet_val`` build from the val/<wnid>/ layout (grayscale and CMYK JPEGs
included), split into 3 shards so that resuming has row groups to skip.
"""

from __future__ import annotations

import io
import textwrap

import pytest
import torch
from PIL import Image

from imagenet_suite.build.dataset_folder import DatasetFolder
from imagenet_suite.build.runner import build_dataset
from imagenet_suite.cli import main
from imagenet_suite.inference import load_model
from imagenet_suite.inference.predict import protocol_transform, split_units
from imagenet_suite.scoring import ModelOutputs, score
from imagenet_suite.scoring.ood_detectors import Embeddings
from tests.fixtures.imagenet_layouts import make_val_images, write_folders_layout

ROWS = 10


@pytest.fixture(scope="module")
def val(tmp_path_factory):
    root = tmp_path_factory.mktemp("predict")
    manual = write_folders_layout(root / "manual", make_val_images(ROWS))
    folder = build_dataset("imagenet_val", root / "out", ["default"], manual_dir=manual, shard_size=4, progress=False)
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
    return main(["predict", *argv, "--no-progress", "--workers", "0"])


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
    assert main(["predict", str(val.path), *argv, "--out", str(parallel), "--workers", "2", "--no-progress"]) == 0
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


def test_protocol_steps_border_crop_first_and_patchml_without_centre_crop():
    loaded = load_model("timm:test_resnet", "none")
    seen = []
    transform = protocol_transform(loaded, {"border_crop_px": 2}, lambda image: seen.append(image.size) or 0)
    transform(Image.new("RGB", (40, 30)))
    assert seen == [(36, 26)]  # 2 px off every side, before the model's preprocessing
    squash = protocol_transform(
        loaded,
        {"preprocessing": "resize the whole composite to the model input, no center crop (seed 001, App. B)"},
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
    from imagenet_suite.inference import predict

    loaded = load_model("timm:test_resnet", "none", seed=2)
    plain = predict(val, loaded, tmp_path / "fp32.pt", workers=0, batch_size=5, progress=False)
    mixed = predict(val, loaded, tmp_path / "amp.pt", workers=0, batch_size=5, amp=True, progress=False)
    plain, mixed = (torch.load(path, weights_only=True) for path in (plain, mixed))
    assert mixed["logits"].dtype == torch.float32 and mixed["ids"] == plain["ids"]
    assert not torch.equal(mixed["logits"], plain["logits"])  # autocast really ran in bfloat16
    assert torch.allclose(mixed["logits"], plain["logits"], atol=0.15, rtol=0.05)
