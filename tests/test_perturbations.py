"""perturbations builder: rows, pixels, seeding, resizing choice, carried labels/protocol, bad input."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from imagenet_suite.builders.perturbations import ENCODERS, Perturbations
from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.core.sources import read_pins_file
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import ConfigError, InvalidSourceData, ManualFileMissing
from imagenet_suite.images.codec import encode
from imagenet_suite.perturbations import corruptions as C
from imagenet_suite.perturbations import imgaug_compat
from imagenet_suite.seeding import example_rng
from tests.fixtures import imagenet_layouts as fx
from tests.helpers import folder_bytes, load

SUBSET = {"corruptions": "gaussian_noise,glass_blur,frost,contrast", "severities": "1,3"}


def val_images(sizes: list[tuple[int, int]], seed: int = 0) -> list[fx.ValImage]:
    """JPEGs of the given (width, height); the second is grayscale, the third CMYK (as in the real val set)."""
    rng = np.random.default_rng(seed)
    images = []
    for i, (width, height) in enumerate(sizes):
        base = rng.integers(0, 256, (height // 6 + 2, width // 6 + 2, 3), dtype=np.uint8)
        image = Image.fromarray(base).resize((width, height), Image.BICUBIC)
        image = image.convert("L") if i == 1 else image.convert("CMYK") if i == 2 else image
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=90)
        images.append(
            fx.ValImage(f"ILSVRC2012_val_{i + 1:08d}", buffer.getvalue(), int(rng.integers(0, 1000)), [(0, 0, 4, 4)])
        )
    return images


@pytest.fixture(scope="module")
def val(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pert-val")
    images = val_images([(64, 48), (40, 56), (48, 48), (72, 40), (50, 60)])
    fx.write_folders_layout(root / "manual", images)
    return build_dataset(
        "imagenet_val", root / "out", ["default"], options=BuildOptions(manual_dir=root / "manual", progress=False)
    )


@pytest.fixture(scope="module")
def frost_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("frost")
    rng = np.random.default_rng(7)
    for i, name in enumerate(C.FROST_FILES):
        Image.fromarray(rng.integers(0, 256, (240 + 4 * i, 260, 3), dtype=np.uint8)).save(root / name)
    return root


def build(config: str, inputs, out: Path, manual=None, **options) -> Path:
    """Build a perturbations config; the fixture's frost pictures are pinned with ``pins`` (they stand in
    for the real ones, whose sizes and sha256 the builder pins)."""
    options.setdefault("progress", False)
    if manual is not None:
        options.setdefault("pins", read_pins_file(fx.write_checksums(manual)))
    options = BuildOptions(inputs=inputs, manual_dir=manual, offline=True, **options)
    return build_dataset("perturbations", out, [config], options)


def rows_of(folder: Path, config: str) -> list[dict]:
    return DatasetFolder(folder).read_table(config, "validation").to_pylist()


REGENERATED = "imagenet_c_regenerated"  # the config (not the released ImageNet-C of the imagenet_c builder)


@pytest.fixture(scope="module")
def imagenet_c(val, frost_dir, tmp_path_factory) -> Path:
    return build(REGENERATED, [val], tmp_path_factory.mktemp("pert-c"), frost_dir, builder_options=SUBSET, shard_size=7)


def test_imagenet_c_rows_pixels_and_clean_copies(imagenet_c, val, frost_dir):
    rows = rows_of(imagenet_c, REGENERATED)
    source = {r["id"]: r for r in DatasetFolder(val).read_table("default", "validation").to_pylist()}
    assert len(rows) == 5 * (1 + 4 * 2)
    assert [r["id"] for r in rows[:3]] == [
        "ILSVRC2012_val_00000001/clean/0",
        "ILSVRC2012_val_00000001/gaussian_noise/1",
        "ILSVRC2012_val_00000001/gaussian_noise/3",
    ]
    frost = C.load_frost_pictures([frost_dir / n for n in C.FROST_FILES])
    for row in rows:
        original = source[row["source_id"]]
        assert row["label"] == original["label"] and row["source_mode"] == original["image_mode"]
        if row["corruption"] == "clean":
            assert row["image"]["bytes"] == original["image"]["bytes"] and row["severity"] == 0
            continue
        rgb = Image.open(io.BytesIO(original["image"]["bytes"])).convert("RGB")
        crop = np.asarray(C.resize_short_center_crop(rgb))
        expected = C.corrupt(
            crop,
            row["corruption"],
            row["severity"],
            example_rng(0, row["corruption"], row["source_id"]),
            "imagenet_c",
            frost,
        )
        assert row["image"]["bytes"] == encode(Image.fromarray(expected), ENCODERS["jpeg85"]), row["id"]
        assert (row["width"], row["height"]) == (224, 224) and row["image"]["bytes"][:2] == b"\xff\xd8"
    assert {r["source_mode"] for r in rows} == {"RGB", "L", "CMYK"}


def test_imagenet_c_loads_and_publishes_its_protocol(imagenet_c, tmp_path):
    ds = load(imagenet_c, REGENERATED, cache_dir=tmp_path / "cache")
    assert ds.features["label"].num_classes == 1000 and ds[1]["image"].mode == "RGB"
    assert imagenet_c.name == "perturbations-2.0.0-seed0-" + imagenet_c.name.rsplit("-", 1)[1]
    assert DatasetFolder(imagenet_c).configs == [REGENERATED]
    protocol = DatasetFolder(imagenet_c).protocol(REGENERATED)
    assert protocol["perturbation"]["apply_at"] == "crop224" and protocol["perturbation"]["flavor"] == "imagenet_c"
    assert protocol["perturbation"]["corruptions"] == ["gaussian_noise", "glass_blur", "frost", "contrast"]
    card = (imagenet_c / "README.md").read_text()
    assert "Resize(256) + CenterCrop(224)" in card and "imagenet_val 1.0.0 (default)" in card


def test_builds_are_byte_identical_for_any_num_proc_and_change_with_the_seed(val, frost_dir, imagenet_c, tmp_path):
    parallel = build(REGENERATED, [val], tmp_path / "b", frost_dir, builder_options=SUBSET, shard_size=7, num_proc=2)
    assert folder_bytes(parallel) == folder_bytes(imagenet_c)
    other = {
        r["id"]: r["image"]["bytes"]
        for r in rows_of(
            build(REGENERATED, [val], tmp_path / "c", frost_dir, builder_options=SUBSET, seed=1), REGENERATED
        )
    }
    for row in rows_of(imagenet_c, REGENERATED):
        stochastic = row["corruption"] not in ("clean", "contrast")
        assert (other[row["id"]] != row["image"]["bytes"]) == stochastic, row["id"]


def test_common_portfolio_corrupts_at_native_size_then_resizes(val, tmp_path):
    out = build("common", [val], tmp_path, builder_options={"clean": False})
    rows = rows_of(out, "common")
    assert [r["corruption"] for r in rows] == list(C.HEUILLET_COMMON[:5])  # 5 images, 11 corruptions: step 1
    assert {r["severity"] for r in rows} == {3}
    source = {r["id"]: r for r in DatasetFolder(val).read_table("default", "validation").to_pylist()}
    for row in rows:
        native = np.asarray(Image.open(io.BytesIO(source[row["source_id"]]["image"]["bytes"])).convert("RGB"))
        corrupted = C.corrupt(native, row["corruption"], 3, example_rng(0, row["corruption"], row["source_id"]))
        expected = Image.fromarray(corrupted).resize((224, 224), Image.BILINEAR)
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(row["image"]["bytes"]))), np.asarray(expected)), row[
            "id"
        ]
        assert Image.open(io.BytesIO(row["image"]["bytes"])).format == "PNG"
    assert DatasetFolder(out).protocol("common")["perturbation"]["assignment"] == "block"


def test_resizing_choice_is_an_option(val, tmp_path):
    out = build(
        "common", [val], tmp_path, builder_options={"clean": False, "apply_at": "resize224", "corruptions": "contrast"}
    )
    row = rows_of(out, "common")[0]
    source = DatasetFolder(val).read_table("default", "validation").to_pylist()[0]
    resized = Image.open(io.BytesIO(source["image"]["bytes"])).convert("RGB").resize((224, 224), Image.BILINEAR)
    expected = C.corrupt(np.asarray(resized), "contrast", 3, example_rng(0, "contrast", source["id"]))
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(row["image"]["bytes"]))), expected)


def test_shape_sets_keep_their_labels_and_16_class_protocol(test_data, tmp_path):
    edge = build_dataset(
        "shape_bias_sets",
        tmp_path / "edge",
        ["edge"],
        options=BuildOptions(manual_dir=test_data / "texture-vs-shape", progress=False, offline=True),
    )
    options = {"input": "shape_bias_sets", "corruptions": "contrast,pixelate"}
    with pytest.raises(
        ConfigError, match=r"option input_config: builder 'shape_bias_sets' has configs \['cue_conflict'"
    ):
        build("common", [edge], tmp_path / "out", builder_options=options)
    out = build("common", [edge], tmp_path / "out", builder_options={**options, "input_config": "edge"})
    folder = DatasetFolder(out)
    assert folder.protocol("common")["decision_mapping"] == "imagenet_16"
    assert folder.features("common")["label16"].names[0] == "airplane"
    rows = folder.read_table("common", "test", ["id", "source_id", "label16"]).to_pylist()
    assert len(rows) == 320 and rows[1]["id"] == "airplane/airplane1.png/contrast/3"
    source = {
        r["id"]: r["label16"] for r in DatasetFolder(edge).read_table("edge", "test", ["id", "label16"]).to_pylist()
    }
    assert all(r["label16"] == source[r["source_id"]] for r in rows)


@pytest.mark.skipif(not imgaug_compat.imgaug_available(), reason="imgaug is not installed (the augment extra)")
def test_imgaug_config_applies_a_seeded_augmenter(val, tmp_path):
    spec = "Sequential([Fliplr(0.5), AdditiveGaussianNoise(scale=(5, 30))])"
    out = build("imgaug", [val], tmp_path, builder_options={"augmenter": spec, "clean": False})
    again = build("imgaug", [val], tmp_path / "again", builder_options={"augmenter": spec, "clean": False}, num_proc=2)
    assert folder_bytes(out) == folder_bytes(again)
    perturb = imgaug_compat.ImgaugPerturbation(imgaug_compat.parse_augmenter(spec))
    source = {r["id"]: r for r in DatasetFolder(val).read_table("default", "validation").to_pylist()}
    for row in rows_of(out, "imgaug"):
        native = Image.open(io.BytesIO(source[row["source_id"]]["image"]["bytes"])).convert("RGB")
        expected = perturb(np.asarray(native), example_rng(0, "imgaug", row["source_id"]))
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(row["image"]["bytes"]))), expected)


@pytest.mark.parametrize(
    "options, error, message",
    [
        ({"corruptions": "gaussian_noise,fish_eye"}, ConfigError, r"unknown corruption 'fish_eye'"),
        ({"severities": "0,3"}, ConfigError, r"severities='0,3': expected integers in 1..5"),
        ({"severities": "three"}, ConfigError, r"severities='three'"),
        ({"apply_at": "after"}, ConfigError, r"apply_at='after': expected one of"),
    ],
)
def test_bad_options_are_named(options, error, message, val, tmp_path):
    with pytest.raises(error, match=message):
        build(REGENERATED, [val], tmp_path, builder_options=options)


def test_the_released_imagenet_c_name_is_not_a_config():
    with pytest.raises(ConfigError, match=r"no config 'imagenet_c'; did you mean 'imagenet_c_regenerated'\?$"):
        Perturbations("imagenet_c")


def test_features_depend_on_config_and_options_only(imagenet_c, tmp_path, test_data):
    """The builder contract: a fresh builder (no prepare) declares the features the build wrote."""
    assert Perturbations(REGENERATED, options=SUBSET).features() == DatasetFolder(imagenet_c).features(REGENERATED)
    shape = Perturbations("common", options={"input": "shape_bias_sets", "input_config": "cue_conflict"}).features()
    assert [k for k in shape if "label" in k or "shape" in k] == [
        "shape_label16",
        "texture_label16",
        "shape_eq_texture",
    ]


def test_an_input_whose_columns_differ_from_its_builders_is_refused(val):
    from datasets import ClassLabel, Value

    from imagenet_suite.builders.perturbations import carried_features, check_carried

    declared = carried_features("imagenet_val", "default")
    check_carried(DatasetFolder(val), "default", declared)  # the same columns: accepted
    for other in ({"label": ClassLabel(names=["a", "b"])}, {**declared, "extra": Value("string")}):
        with pytest.raises(
            InvalidSourceData,
            match=r"\(default\): its columns \['label'\] are not those imagenet_val "
            r"default declares",
        ):
            check_carried(DatasetFolder(val), "default", other)


def test_missing_input_frost_and_augmenter_are_named(val, tmp_path):
    with pytest.raises(ManualFileMissing, match=r"needs a built imagenet_val dataset: pass its folder as inputs"):
        build(REGENERATED, [], tmp_path)
    with pytest.raises(Exception, match=r"frost1.png"):
        build(REGENERATED, [val], tmp_path, builder_options={"corruptions": "frost"})
    with pytest.raises(ConfigError, match=r"imgaug config needs builder_options augmenter="):
        build("imgaug", [val], tmp_path)


def test_images_too_small_to_corrupt_are_named(tmp_path):
    fx.write_folders_layout(tmp_path / "manual", val_images([(64, 48), (40, 20)]))
    small = build_dataset(
        "imagenet_val",
        tmp_path / "val",
        ["default"],
        options=BuildOptions(manual_dir=tmp_path / "manual", progress=False),
    )
    with pytest.raises(
        InvalidSourceData, match=r"id ILSVRC2012_val_00000002: shot_noise severity 3: image is 40x20 px"
    ):
        build("common", [small], tmp_path / "out", builder_options={"corruptions": "shot_noise"})


def test_score_on_a_build_reports_c_robustness(imagenet_c):
    import torch

    from imagenet_suite.scoring.evaluation.report import score
    from imagenet_suite.scoring.metrics import robustness  # noqa: F401  (registers the metric)
    from imagenet_suite.scoring.outputs import ModelOutputs

    rows = DatasetFolder(imagenet_c).read_table(REGENERATED, "validation", ["id", "label", "corruption"]).to_pylist()
    correct = np.array([r["corruption"] == "clean" or i % 3 == 0 for i, r in enumerate(rows)])
    logits = torch.zeros(len(rows), 1000)
    for i, row in enumerate(rows):
        logits[i, row["label"] if correct[i] else (row["label"] + 1) % 1000] = 10.0
    report = score(imagenet_c, ModelOutputs(logits, [r["id"] for r in rows]), metrics=["robustness"])
    corrupted = np.array([r["corruption"] != "clean" for r in rows])
    per_split = {}
    for row, hit in zip(rows, correct, strict=True):
        if row["corruption"] != "clean":
            per_split.setdefault(row["id"].split("/", 1)[1], []).append(hit)
    means = {}
    for key, hits in per_split.items():
        means.setdefault(key.split("/")[0], []).append(np.mean(hits))
    expected = np.mean([np.mean(v) for v in means.values()])
    assert report.value("clean_accuracy") == 1.0
    assert report.value("c_robustness") == pytest.approx(expected)
    assert report.value("pooled_corruption_accuracy") == pytest.approx(correct[corrupted].mean())


class _RightOnlyOnClean(torch.nn.Module):
    """Predicts its label for an input equal to a clean row's preprocessed image, class ``wrong`` otherwise."""

    def __init__(self, clean: dict[bytes, int], wrong: int):
        super().__init__()
        self.clean, self.wrong = clean, wrong

    def forward(self, batch: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(len(batch), 1000)
        for i, image in enumerate(batch):
            logits[i, self.clean.get(image.numpy().tobytes(), self.wrong)] = 1.0
        return logits


def test_evaluate_ranks_a_corruption_build_by_its_corrupted_accuracy(val, tmp_path):
    """Through evaluate and leaderboard: a model right on every clean row and wrong on every corrupted
    one has a pooled top-1 of (clean rows / rows), but its headline accuracy is 0.0 (the corrupted rows),
    the clean accuracy 1.0 beside it."""
    import dataclasses

    from imagenet_suite.inference import PredictOptions, load_model
    from imagenet_suite.inference.evaluate import run_suite
    from imagenet_suite.inference.suite_options import SuiteOptions
    from imagenet_suite.scoring.summary.leaderboard import leaderboard

    out = build("common", [val], tmp_path / "common", builder_options={"corruptions": "contrast"})
    rows = rows_of(out, "common")
    loaded = load_model("timm:test_resnet", "none")

    def preprocessed(row) -> bytes:
        return loaded.transform(Image.open(io.BytesIO(row["image"]["bytes"])).convert("RGB")).numpy().tobytes()

    clean = {preprocessed(r): r["label"] for r in rows if r["corruption"] == "clean"}
    wrong = next(c for c in range(1000) if c not in {r["label"] for r in rows})
    model = dataclasses.replace(loaded, model=_RightOnlyOnClean(clean, wrong).eval())
    options = SuiteOptions(PredictOptions(batch_size=4, workers=0, progress=False), bootstrap=0)
    suite = run_suite(model, [out], tmp_path / "run", options)
    (key,) = suite["summary"]["accuracies"]
    report = {row["metric"]: row["value"] for row in suite["datasets"][key]["metrics"] if not row["subgroup"]}
    assert len(clean) == 5 and len(rows) > 5
    assert report["top1_accuracy"] == pytest.approx(5 / len(rows))  # the pooled top-1 the headline was before
    assert suite["summary"]["accuracies"][key] == {
        "metric": "mean_corruption_accuracy",
        "value": 0.0,
        "clean_accuracy": 1.0,
    }
    assert leaderboard({"right only on clean": suite}).accuracies.loc["right only on clean", key] == 0.0
