"""Evaluation protocols through ``evaluate`` and ``leaderboard``: each model's own preprocessing (centre
crop, ``hesse2025``) and the multi-label sets resized to the input size without a centre crop
(``anzaku2024``, Anzaku et al. 2024, App. B), for timm and torchvision models; ΔRank over PatchML seeds.

Small builds: ImageNet val and ReaL (images) from the twelve fixture val images, two PatchML seeds on the
quarter-size grid of tests/test_patchml.py.
"""

from __future__ import annotations

import copy
import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import ConfigError
from imagenet_suite.inference import PredictOptions, load_model
from imagenet_suite.inference import evaluate as evaluate_module
from imagenet_suite.inference.evaluate import run_suite
from imagenet_suite.inference.gpu_decode import tensor_transform
from imagenet_suite.inference.models import resize_only_transform, squash_transform
from imagenet_suite.inference.suite_options import SuiteOptions
from imagenet_suite.inference.suite_targets import dataset_targets, protocol_targets
from imagenet_suite.scoring.summary.leaderboard import leaderboard, leaderboard_markdown
from tests.fixtures import imagenet_layouts as fx
from tests.fixtures.patchml_sources import make_object_images

SMALL = {"canvas": 128, "grid": "2:64,3:64,4:64,6:42,9:32"}
OPTIONS = PredictOptions(workers=0, batch_size=5, progress=False, gpu_decode=False)


@pytest.fixture(scope="module")
def builds(val_layouts, tmp_path_factory):
    root = tmp_path_factory.mktemp("protocols")
    pins = read_pins_file(val_layouts["tar"] / "checksums.tsv")
    val_options = BuildOptions(manual_dir=val_layouts["tar"], pins=pins, offline=True, progress=False)
    val = build_dataset("imagenet_val", root / "val", ["default"], options=val_options)
    real = build_dataset("imagenet_real", root / "real", ["images"], options=val_options)
    kaggle = fx.write_kaggle_layout(root / "kaggle", make_object_images(24, seed=5))
    boxes = build_dataset(
        "imagenet_val", root / "boxes", ["boxes"], options=BuildOptions(manual_dir=kaggle, progress=False)
    )
    patchml = []
    for seed in (0, 1):  # the report key of a dataset built twice is its folder's name
        built = build_dataset(
            "patchml",
            root / "built",
            ["images"],
            BuildOptions(seed=seed, inputs=[boxes], builder_options=SMALL, progress=False),
        )
        patchml.append(built.rename(root / f"patchml-s{seed}"))
    return {"val": val, "real": real, "patchml": patchml}


def images_of(folder) -> tuple[list[str], list[Image.Image]]:
    folder = DatasetFolder(folder)
    ids, images = [], []
    for path in folder.split_files(folder.configs[0], folder.splits(folder.configs[0])[0]):
        table = pq.read_table(path, columns=["id", "image"]).to_pylist()
        for row in table:
            ids.append(row["id"])
            images.append(Image.open(io.BytesIO(row["image"]["bytes"])).convert("RGB"))
    return ids, images


def forward(model, transform, images) -> torch.Tensor:
    with torch.inference_mode():
        return model(torch.stack([transform(image) for image in images])).float()


@pytest.fixture(scope="module")
def timm_run(builds, tmp_path_factory):
    loaded = load_model("timm:test_resnet", "none", seed=0)
    run_dir = tmp_path_factory.mktemp("run") / "timm"
    datasets = [builds["val"], builds["real"], *builds["patchml"]]
    suite = run_suite(loaded, datasets, run_dir, SuiteOptions(predict=OPTIONS, bootstrap=0))
    return loaded, run_dir, suite


def test_timm_multilabel_set_is_predicted_under_both_protocols_side_by_side(timm_run, builds):
    loaded, run_dir, suite = timm_run
    outputs = sorted(path.name for path in (run_dir / "outputs").glob("*.pt"))
    assert outputs == [
        "imagenet_real.pt",
        "imagenet_real@anzaku2024.pt",
        "imagenet_val.pt",
        "patchml-s0.pt",
        "patchml-s1.pt",
    ]
    assert set(suite["datasets"]) == {
        "imagenet_val",
        "imagenet_real",
        "imagenet_real@anzaku2024",
        "patchml-s0",
        "patchml-s1",
    }
    meta = {key: report["meta"]["preprocessing"] for key, report in suite["datasets"].items()}
    assert meta["imagenet_real"]["protocol"] == "hesse2025" and meta["imagenet_real"]["centre_crop"] is True
    assert meta["imagenet_real@anzaku2024"]["protocol"] == "anzaku2024"
    assert meta["imagenet_real@anzaku2024"]["centre_crop"] is False
    assert (
        meta["patchml-s0"] == {**meta["patchml-s1"], "protocol": "anzaku2024"} and not meta["patchml-s0"]["centre_crop"]
    )
    assert "CenterCrop(size=(160, 160))" in meta["imagenet_real"]["transform"]
    record = json.loads((run_dir / "builds" / "imagenet_real@anzaku2024.json").read_text())
    assert record["key"] == "imagenet_real@anzaku2024" and record["protocol"] == "anzaku2024"
    assert suite["datasets"]["imagenet_real@anzaku2024"]["provenance"]["outputs"]["builder"] == "imagenet_real"

    ids, images = images_of(builds["real"])
    crop = torch.load(run_dir / "outputs" / "imagenet_real.pt")
    squash = torch.load(run_dir / "outputs" / "imagenet_real@anzaku2024.pt")
    assert crop["ids"] == squash["ids"] == ids
    assert torch.allclose(crop["logits"], forward(loaded.model, loaded.transform, images), atol=1e-4)
    expected = forward(loaded.model, squash_transform(loaded.data_config), images)
    assert torch.allclose(squash["logits"], expected, atol=1e-4)
    assert not torch.allclose(crop["logits"], squash["logits"], atol=1e-3)  # non-square images: the crop mattered


def test_summary_reads_each_number_from_its_papers_protocol(timm_run):
    _, run_dir, suite = timm_run
    summary, reports = suite["summary"], suite["datasets"]
    assert set(summary["asma"]) == {"imagenet_real@anzaku2024", "patchml-s0", "patchml-s1"}
    asma = next(r["value"] for r in reports["imagenet_real@anzaku2024"]["metrics"] if r["metric"] == "asma")
    assert summary["asma"]["imagenet_real@anzaku2024"]["exact"] == asma
    assert summary["real"]["source"] == "imagenet_real"  # ReaL top-1 (Beyer et al.): centre crop
    real = next(r["value"] for r in reports["imagenet_real"]["metrics"] if r["metric"] == "real_top1_accuracy")
    assert summary["real"]["real_top1_accuracy"] == real
    assert "imagenet_real@anzaku2024" not in summary["accuracies"] and "imagenet_real" in summary["accuracies"]
    assert summary["anzaku2024"]["imagenet_real@anzaku2024"]["asma"] == asma
    assert set(summary["protocols"]) == {"hesse2025", "anzaku2024"}
    markdown = (run_dir / "suite.md").read_text()
    assert "no centre crop" in markdown and "Evaluation protocols" in markdown


def test_outputs_are_reused_per_protocol(timm_run, builds, monkeypatch):
    loaded, run_dir, suite = timm_run

    def refuse(*args, **kwargs):
        raise AssertionError("predicted again")

    monkeypatch.setattr(evaluate_module, "predict", refuse)
    monkeypatch.setattr(evaluate_module.PredictionStore, "predict", refuse)
    again = run_suite(
        loaded, [builds["val"], builds["real"], *builds["patchml"]], run_dir, SuiteOptions(predict=OPTIONS, bootstrap=0)
    )
    assert again["datasets"] == suite["datasets"]


def test_torchvision_model_input_under_each_protocol(builds, tmp_path):
    loaded = load_model("torchvision:resnet18", "none", seed=0)
    seen: list[torch.Tensor] = []
    # a call's images: its rows without the padding (copies of its last image, to batch_size rows)
    loaded.model.register_forward_pre_hook(lambda module, args: seen.append(torch.unique_consecutive(args[0], dim=0)))
    suite = run_suite(loaded, [builds["real"]], tmp_path / "run", SuiteOptions(predict=OPTIONS, bootstrap=0))
    assert sorted(suite["datasets"]) == ["imagenet_real", "imagenet_real@anzaku2024"]
    _, images = images_of(builds["real"])
    inputs = torch.cat(seen)
    assert inputs.shape[0] == 2 * len(images)
    crop_expected = torch.stack([loaded.transform(image) for image in images])  # the weights' transforms()
    preset = loaded.transform
    from torchvision.transforms import functional as F

    resized = [
        F.normalize(
            F.to_tensor(F.resize(image, [224, 224], preset.interpolation, antialias=True)), preset.mean, preset.std
        )
        for image in images
    ]
    assert preset.crop_size == [224]
    assert torch.allclose(inputs[: len(images)], crop_expected, atol=1e-6)
    assert torch.allclose(inputs[len(images) :], torch.stack(resized), atol=1e-6)
    meta = suite["datasets"]["imagenet_real@anzaku2024"]["meta"]["preprocessing"]
    assert meta["centre_crop"] is False and "Resize(size=(224, 224)" in meta["transform"]


def test_torchvision_resize_only_has_an_exact_tensor_counterpart():
    loaded = load_model("torchvision:resnet18", "none", seed=0)
    transform = resize_only_transform(loaded)
    image = Image.fromarray(
        torch.randint(0, 256, (37, 61, 3), generator=torch.Generator().manual_seed(0)).byte().numpy()
    )
    pixels = torch.from_numpy(np.array(image)).permute(2, 0, 1).contiguous()
    on_tensor = tensor_transform(transform)([pixels])[0]
    assert on_tensor.shape == (3, 224, 224)
    std = torch.tensor(loaded.transform.std).view(3, 1, 1)
    assert ((on_tensor - transform(image)) * std).abs().max() <= 1 / 255 + 1e-6  # one level, as the other paths


def test_protocol_choice(builds):
    base = dataset_targets([builds["val"], builds["real"], builds["patchml"][0]])
    keys = lambda protocols: [t.key for t in protocol_targets(base, protocols)]  # noqa: E731
    assert keys(["hesse2025"]) == ["imagenet_val", "imagenet_real", "patchml"]
    assert keys(["anzaku2024"]) == ["imagenet_real@anzaku2024", "patchml"]
    assert keys(["hesse2025", "anzaku2024"]) == ["imagenet_val", "imagenet_real", "imagenet_real@anzaku2024", "patchml"]
    with pytest.raises(ConfigError, match="protocols: unknown protocol"):
        SuiteOptions(protocols=("crop",))
    with pytest.raises(ConfigError, match="at least one"):
        SuiteOptions(protocols=())


def test_delta_rank_averages_the_patchml_seeds(timm_run):
    _, _, suite = timm_run
    other = copy.deepcopy(suite)
    other["model"] = "other"
    # ranks second on ImageNet top-1 resized without a centre crop (ΔRank's, the table's), first by the centre crop
    other["summary"]["anzaku2024"]["imagenet_real@anzaku2024"]["top1_accuracy"] -= 0.5
    other["summary"]["quba"]["dimensions"]["accuracy"]["value"] += 0.5
    mean = (suite["summary"]["asma"]["patchml-s0"]["exact"] + suite["summary"]["asma"]["patchml-s1"]["exact"]) / 2
    # "other": a mean ASMA above the first model's only with both seeds averaged (not from its first seed)
    other["summary"]["asma"]["patchml-s0"]["exact"] = mean - 0.2
    other["summary"]["asma"]["patchml-s1"]["exact"] = mean + 0.3
    board = leaderboard({"timm": suite, "other": other})
    assert board.delta_rank.to_dict() == {"timm": -1, "other": 1}
    assert board.delta_rank.attrs["seeds"] == {"timm": [0, 1], "other": [0, 1]}
    markdown = leaderboard_markdown(board)
    assert "PatchML ASMA is the mean over seeds 0, 1 in every run" in markdown
    other["summary"]["asma"]["patchml-s1"]["exact"] = mean - 0.1  # mean of both below the first model's
    assert leaderboard({"timm": suite, "other": other}).delta_rank.to_dict() == {"timm": 0, "other": 0}
    one_seed = copy.deepcopy(other)
    del one_seed["datasets"]["patchml-s1"]
    board = leaderboard({"timm": suite, "other": one_seed}, allow_mixed_builds=True)
    assert board.delta_rank.attrs["seeds"]["other"] == [0]
    assert "The runs differ in PatchML seeds" in leaderboard_markdown(board)


def test_an_outputs_record_of_another_protocol_is_refused(timm_run, builds, tmp_path):
    import shutil

    from imagenet_suite.errors import RunFolderError
    from imagenet_suite.inference.run_folder import check_run_folder, run_manifest
    from imagenet_suite.inference.suite_targets import suite_targets

    loaded, run_dir, _ = timm_run
    copy_dir = shutil.copytree(run_dir, tmp_path / "run")
    record_path = copy_dir / "builds" / "imagenet_real@anzaku2024.json"
    record = json.loads(record_path.read_text())
    record_path.write_text(json.dumps({**record, "protocol": "hesse2025"}))
    targets = suite_targets([builds["val"], builds["real"]])
    with pytest.raises(RunFolderError, match="predicted under evaluation protocol 'hesse2025'"):
        check_run_folder(copy_dir, run_manifest(loaded), targets)
