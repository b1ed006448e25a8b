"""One forward pass per distinct image (``evaluate``'s prediction store, :mod:`imagenet_suite.inference.store`).

The suite: ImageNet val (``default`` and ``boxes``), ReaL ``images`` and the multi-label ``images`` config
(splits ``validation`` and ``imagenet_m``), each built by its real builder from one manual folder, so all hold
the same twelve fixture JPEGs. The model is a tiny random-weight user model whose forward records every input row
it is given; a model call is padded to a fixed number of rows with copies of its last image, so the images of a
call are its distinct rows.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from pathlib import Path

import pytest
import torch

from imagenet_suite import cli
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.inference import PredictOptions, load_model, predict
from imagenet_suite.inference.evaluate import run_suite
from imagenet_suite.inference.predict import PredictJob
from imagenet_suite.inference.store import CHUNKS, ENTRIES, IMAGES, PredictionStore
from imagenet_suite.inference.suite_options import SuiteOptions
from tests.fixtures import human_accuracy as ha_fx
from tests.helpers import REPO_ROOT

VAL_IMAGES = 12
PREPROCESSINGS = 2  # hesse2025's centre crop and anzaku2024's resize-only (the multi-label sets)
TINY_MODEL = """
import torch
from torch import nn


def make():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 1000))
    model.pretrained_cfg = {"input_size": (3, 24, 24), "crop_pct": 0.875, "interpolation": "bilinear",
                            "mean": (0.5, 0.5, 0.5), "std": (0.25, 0.25, 0.25)}
    return model
"""


@pytest.fixture(scope="module")
def model_spec(tmp_path_factory) -> str:
    """A random-init user model (a 3x3 convolution and a linear head on 24x24 inputs): fast on the CPU."""
    path = tmp_path_factory.mktemp("model") / "tiny.py"
    path.write_text(TINY_MODEL)
    return f"{path}:make"


@pytest.fixture(scope="module")
def suite_folders(tmp_path_factory) -> list[Path]:
    """imagenet_val (default, boxes), imagenet_real (images), imagenet_multilabel (images): one set of images."""
    root = tmp_path_factory.mktemp("dedup")
    manual = ha_fx.write_multilabel_manual_dir(root / "manual")
    shutil.copy(REPO_ROOT / "tests" / "data" / "reassessed-imagenet" / "real.json", manual / "real.json")
    options = BuildOptions(
        manual_dir=manual, pins=read_pins_file(manual / "checksums.tsv"), offline=True, progress=False
    )
    builds = {"imagenet_val": ["default", "boxes"], "imagenet_real": ["images"], "imagenet_multilabel": ["images"]}
    return [build_dataset(name, root / name, configs, options=options) for name, configs in builds.items()]


class Inputs:
    """The input rows of every call of ``model`` (sha256 of each row's float32 bytes)."""

    def __init__(self, model: torch.nn.Module):
        self.calls: list[list[str]] = []
        self.handle = model.register_forward_pre_hook(self._record)

    def _record(self, module, args) -> None:
        self.calls.append([hashlib.sha256(row.float().numpy().tobytes()).hexdigest() for row in args[0]])

    def images(self) -> int:
        """Images the model was run on: the distinct rows of each call (the rest are padding), summed."""
        return sum(len(set(call)) for call in self.calls)

    def distinct(self) -> int:
        return len({row for call in self.calls for row in call})


def _options(**suite) -> SuiteOptions:
    return SuiteOptions(PredictOptions(batch_size=2, workers=0, progress=False), bootstrap=0, **suite)


def _outputs(run_dir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted((run_dir / "outputs").glob("*.pt"))}


def test_a_suite_runs_the_model_once_per_distinct_image_and_writes_the_outputs_predict_writes(
    suite_folders, model_spec, tmp_path
):
    loaded, inputs = _counting(model_spec)
    store = tmp_path / "store"
    first = run_suite(loaded, suite_folders, tmp_path / "first", _options(prediction_store=store))
    outputs = _outputs(tmp_path / "first")
    assert {"imagenet_val__default.pt", "imagenet_val__boxes.pt", "imagenet_real.pt", "imagenet_real@anzaku2024.pt",
            "imagenet_multilabel__validation.pt", "imagenet_multilabel__imagenet_m.pt"} <= set(outputs)  # fmt: skip
    # every image once per preprocessing, though five splits (eight outputs files) hold it
    assert inputs.images() == inputs.distinct() == VAL_IMAGES * PREPROCESSINGS
    assert outputs["imagenet_val__default.pt"] == outputs["imagenet_val__boxes.pt"]
    assert outputs["imagenet_real.pt"] != outputs["imagenet_real@anzaku2024.pt"]  # resize-only is not shared

    inputs.calls.clear()
    second = run_suite(loaded, suite_folders, tmp_path / "second", _options(prediction_store=store))
    assert inputs.calls == [] and _outputs(tmp_path / "second") == outputs
    assert second["datasets"] == first["datasets"] and second["summary"] == first["summary"]

    plain = run_suite(loaded, suite_folders, tmp_path / "plain", _options(dedup=False))
    assert inputs.images() > VAL_IMAGES * PREPROCESSINGS * 2  # every split predicted in full
    assert _outputs(tmp_path / "plain") == outputs and plain["datasets"] == first["datasets"]
    assert not (tmp_path / "plain" / "predictions").exists() and not (tmp_path / "first" / "predictions").exists()
    chunks = [path for path in store.glob(f"*/{CHUNKS}/*") if path.is_file()]
    assert chunks == []  # the batches are in the outputs files now


def test_the_default_store_is_in_the_run_folder_and_the_cli_takes_a_shared_one(
    suite_folders, model_spec, tmp_path, monkeypatch
):
    val = DatasetFolder(suite_folders[0])
    common = ["--model", model_spec, "--weights", "none", "--batch-size", "2", "--workers", "0",
              "--no-progress", "--bootstrap", "0", "--protocol", "hesse2025", "--datasets", str(val.path)]  # fmt: skip
    assert cli.main(["evaluate", *common, "--out", str(tmp_path / "run")]) == 0
    store = PredictionStore(tmp_path / "run" / "predictions")
    assert (store.root / IMAGES / val.build_info_sha256 / "boxes" / "validation.json").is_file()
    assert len(list(store.root.glob(f"*/{ENTRIES}/*.json"))) == 2  # the outputs files of default and boxes
    shared = ["--prediction-store", str(store.root)]
    out = tmp_path / "boxes.pt"
    argv = ["predict", str(val.path), "--model", model_spec, "--weights", "none", "--config", "boxes",
            "--batch-size", "2", "--workers", "0", "--no-progress", "--out", str(out), *shared]  # fmt: skip
    monkeypatch.setattr(PredictJob, "forward", lambda *args: pytest.fail("the store holds every image"))
    assert cli.main(argv) == 0
    assert out.read_bytes() == (tmp_path / "run" / "outputs" / "imagenet_val__boxes.pt").read_bytes()


def _counting(model_spec: str):
    loaded = load_model(model_spec, "none", seed=0)
    return loaded, Inputs(loaded.model)


def test_damaged_entries_are_set_aside_and_their_images_predicted_again(suite_folders, model_spec, tmp_path, caplog):
    val = DatasetFolder(suite_folders[0])
    loaded, inputs = _counting(model_spec)
    options = PredictOptions(batch_size=4, workers=0, progress=False)
    expected = predict(val, loaded, tmp_path / "plain.pt", config="default", options=options).read_bytes()
    inputs.calls.clear()
    store = PredictionStore(tmp_path / "store")
    first = store.predict(val, loaded, tmp_path / "first.pt", config="default", options=options)
    assert first.read_bytes() == expected and inputs.images() == VAL_IMAGES
    first.write_bytes(first.read_bytes()[:-1] + b"x")  # the outputs file the store names is rewritten
    (hash_list,) = store.root.glob(f"{IMAGES}/*/default/validation.json")
    record = json.loads(hash_list.read_text())
    record["images"][0] = record["images"][1]  # an image hash changed
    hash_list.write_text(json.dumps(record))
    inputs.calls.clear()
    with caplog.at_level(logging.WARNING, logger="imagenet_suite.inference.store"):
        again = PredictionStore(store.root).predict(
            val, loaded, tmp_path / "again.pt", config="default", options=options
        )
    assert again.read_bytes() == expected and inputs.images() == VAL_IMAGES
    warnings = [record.getMessage() for record in caplog.records]
    assert any("does not match the sha256 stored with it; the images are hashed again" in m for m in warnings)
    assert any("changed since it was stored" in m and "set aside" in m for m in warnings)
    assert len(list(store.root.glob(f"*/{ENTRIES}/*.json.rejected"))) == 1


def test_an_interrupted_prediction_resumes_from_its_kept_batches(suite_folders, model_spec, tmp_path):
    val = DatasetFolder(suite_folders[0])
    loaded, inputs = _counting(model_spec)
    options = PredictOptions(batch_size=4, workers=0, progress=False, features=True)
    expected = predict(val, loaded, tmp_path / "plain.pt", config="boxes", options=options).read_bytes()

    def stop_at_the_second_batch(module, args):
        if len(inputs.calls) == 2:
            raise KeyboardInterrupt

    stop = loaded.model.register_forward_pre_hook(stop_at_the_second_batch)
    inputs.calls.clear()
    store = PredictionStore(tmp_path / "store")
    with pytest.raises(KeyboardInterrupt):
        store.predict(val, loaded, tmp_path / "boxes.pt", config="boxes", options=options)
    stop.remove()
    assert len(list(store.root.glob(f"*/{CHUNKS}/*.pt"))) == 1 and not (tmp_path / "boxes.pt").exists()
    inputs.calls.clear()
    out = PredictionStore(store.root).predict(val, loaded, tmp_path / "boxes.pt", config="boxes", options=options)
    assert inputs.images() == VAL_IMAGES - 4 and out.read_bytes() == expected
    assert tuple(torch.load(out, weights_only=True)["features"].shape) == (VAL_IMAGES, 4)  # the head's input
