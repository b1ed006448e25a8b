"""``evaluate --hierarchy``: LCA under a K-means hierarchy (LCA-on-the-Line, Shi et al. 2024, App. F.2),
the hierarchy recorded in suite.json / suite.md / each report, recomputed (never mixed) when a run folder is
evaluated again with another hierarchy, and refused before any work when it cannot be used.

The K-means hierarchy is a real ``kmeans_hierarchy`` build over the 1000 ImageNet-1k classes (one tiny
image per class, seeded random logits); the evaluated model is a random-weight timm model on the
twelve-image fixture val set. Expected LCA values are computed here from the hierarchy's ``classes`` table
(the level columns), not from its matrices: the LCA level of two classes is the deepest level at which
they share a cluster, the paper's distance is ``top − level``.
"""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pytest
import torch
from PIL import Image

from imagenet_suite.core.options import BuildOptions
from imagenet_suite.core.runner import build_dataset
from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import ConfigError
from imagenet_suite.hierarchies.imagenet1k import imagenet1k_distance_matrix
from imagenet_suite.inference import PredictOptions, load_model
from imagenet_suite.inference import evaluate as evaluate_module
from imagenet_suite.inference.evaluate import run_suite
from imagenet_suite.inference.suite_options import SuiteOptions, check_arguments
from imagenet_suite.scoring.evaluation.options import CalibrationOptions
from imagenet_suite.scoring.metrics.calibration import DEFAULT_ECE_CONVENTION, CalibrationBins, calibration_bins
from imagenet_suite.scoring.outputs import ModelOutputs
from imagenet_suite.scoring.summary.suite_json import read_suite
from tests.fixtures import imagenet_layouts as val_fx
from tests.helpers import build_val


def _options(hierarchy=None) -> SuiteOptions:
    predict = PredictOptions(batch_size=8, workers=0, progress=False)
    return SuiteOptions(predict=predict, protocols=("hesse2025",), hierarchy=hierarchy, bootstrap=0)


def _kmeans_build(root, classes: int, option_classes: str = "all"):
    """A ``kmeans_hierarchy`` build from seeded random logits on a val set of one image per class
    ``0 .. classes - 1``; ``(folder, outputs file)``."""
    images = []
    for i in range(classes):
        buffer = io.BytesIO()
        Image.fromarray(np.full((8, 8, 3), i % 251, np.uint8)).save(buffer, format="JPEG")
        images.append(val_fx.ValImage(f"ILSVRC2012_val_{i + 1:08d}", buffer.getvalue(), i, [(0, 0, 4, 4)]))
    manual = val_fx.write_folders_layout(root / "manual", images)
    val = build_dataset("imagenet_val", root / "val", options=BuildOptions(manual_dir=manual, progress=False))
    outputs = root / "logits.npz"
    logits = np.random.default_rng(7).normal(size=(classes, 16)).astype(np.float32)
    np.savez(outputs, ids=np.asarray([im.image_id for im in images]), logits=logits)
    folder = build_dataset(
        "kmeans_hierarchy",
        root / "hierarchy",
        options=BuildOptions(
            inputs=[val], builder_options={"outputs": str(outputs), "classes": option_classes}, progress=False
        ),
    )
    return folder, outputs


@pytest.fixture(scope="module")
def kmeans(tmp_path_factory):
    return _kmeans_build(tmp_path_factory.mktemp("kmeans"), 1000)


@pytest.fixture(scope="module")
def runs(val_layouts, kmeans, tmp_path_factory):
    """One run folder evaluated three times: WordNet (default), then K-means, then WordNet again, the
    outputs predicted once."""
    model = load_model("timm:test_resnet", "none", seed=0)
    val = build_val(val_layouts, "folders", tmp_path_factory.mktemp("val"))
    run_dir = tmp_path_factory.mktemp("run")
    first = run_suite(model, [val], run_dir, _options())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(evaluate_module, "predict", lambda *a, **k: pytest.fail("outputs should have been reused"))
        patch.setattr(evaluate_module.PredictionStore, "predict", lambda *a, **k: pytest.fail("reused, not copied"))
        second = run_suite(model, [val], run_dir, _options(kmeans[0]))
        second_md = (run_dir / "suite.md").read_text()
        third = run_suite(model, [val], run_dir, _options())
    return run_dir, first, second, second_md, third


def _lca_rows(suite) -> dict[str, float]:
    rows = suite["datasets"]["imagenet_val"]["metrics"]
    return {row["variant"]: row["value"] for row in rows if row["metric"] == "lca"}


def _mistakes(run_dir, val_images) -> tuple[np.ndarray, np.ndarray]:
    """(label, top-1) of the misclassified rows of the run's ImageNet-val outputs."""
    outputs = ModelOutputs.load(run_dir / "outputs" / "imagenet_val.pt")
    label_of = {im.image_id: im.label for im in val_images}
    labels = np.array([label_of[i] for i in outputs.ids])
    top1 = outputs.values.argmax(dim=1).numpy()
    wrong = top1 != labels
    assert wrong.sum() >= 10  # a random model: almost every row is a mistake
    return labels[wrong], top1[wrong]


def test_lca_under_a_kmeans_hierarchy_is_its_levels_computed_directly(runs, kmeans, val_images):
    run_dir, first, second, _, _ = runs
    table = DatasetFolder(kmeans[0]).read_table(None, "classes").to_pydict()
    levels = sorted(name for name in table if name.startswith("level_"))
    top = len(levels)  # levels 0..9 for 1000 classes; every class is its own cluster at level 10
    assert top == 10 and table["class_index"] == list(range(1000))
    clusters = np.array([table[name] for name in levels]).T  # [class, level]
    labels, predicted = _mistakes(run_dir, val_images)
    shared = clusters[labels] == clusters[predicted]  # level 0 is one cluster: always shared
    deepest = np.array([np.flatnonzero(row).max() for row in shared])
    expected = float(np.mean(top - deepest))
    lca = _lca_rows(second)
    assert next(iter(lca)) == "depth_one_sided"  # the paper's distance with a K-means hierarchy comes first
    assert lca["depth_one_sided"] == pytest.approx(expected, rel=1e-6)
    assert lca["depth_two_sided"] == pytest.approx(2 * expected, rel=1e-6)
    assert second["summary"]["lca"]["imagenet_val"]["depth_one_sided"] == lca["depth_one_sided"]
    wordnet = float(np.mean(imagenet1k_distance_matrix("depth_one_sided")[labels, predicted]))
    assert _lca_rows(first)["depth_one_sided"] == pytest.approx(wordnet, rel=1e-6) and wordnet != pytest.approx(
        expected
    )


def test_the_hierarchy_is_recorded_in_suite_json_reports_and_suite_md(runs, kmeans):
    run_dir, first, second, second_md, third = runs
    folder, outputs = kmeans
    built = DatasetFolder(folder)
    record = second["hierarchy"]
    assert record["kind"] == "kmeans" and record["paper_distance"] == "depth_one_sided"
    assert record["paper_distances"] == {}  # K-means: the same distance for every OOD set
    assert record["build"] == {
        "folder": str(folder.resolve()),
        "builder": "kmeans_hierarchy",
        "version": built.version,
        "config": "default",
        "split": "classes",
        "build_info_sha256": hashlib.sha256((folder / "build_info.json").read_bytes()).hexdigest(),
    }
    assert record["seed"] == 0 and record["shipped_sha256"] is None
    assert record["options"] == {**record["options"], "classes": "all", "nested": False, "n_init": 1}
    assert record["options"]["outputs"] == str(outputs)
    assert record["sources"]["outputs"] == {
        "file": "logits.npz",
        "sha256": hashlib.sha256(outputs.read_bytes()).hexdigest(),
    }
    assert second["datasets"]["imagenet_val"]["meta"]["hierarchy"] == record
    sha = record["build"]["build_info_sha256"]
    assert f"kmeans_hierarchy {built.version}, build_info.json sha256 {sha}, seed 0" in second_md
    assert "reports `depth_one_sided` with a kmeans hierarchy" in second_md
    # WordNet: the depth-based LCA predicts ImageNet-Sketch and ImageNet-A (Shi et al. App. E.2), named in suite.md
    wordnet_sets = {"imagenet_sketch": "depth_two_sided", "imagenet_a": "depth_two_sided"}
    assert third["hierarchy"]["paper_distances"] == wordnet_sets
    assert (
        "reports `info` with a wordnet hierarchy (its Table 1 on every set), and correlates OOD accuracy with the "
        "ImageNet-val LCA in that distance but `depth_two_sided` for `imagenet_sketch`, `imagenet_a` (App. E.2"
    ) in (run_dir / "suite.md").read_text()
    for suite in (first, third):
        assert suite["hierarchy"]["kind"] == "wordnet" and suite["hierarchy"]["build"] is None
        shipped = suite["hierarchy"]["shipped_sha256"]
        assert len(shipped) == 64 and f"nodes CSV sha256 {shipped}" in (run_dir / "suite.md").read_text()
    assert read_suite(run_dir)["hierarchy"] == third["hierarchy"]


def test_a_run_folder_evaluated_again_recomputes_lca_under_the_new_hierarchy(runs):
    run_dir, first, second, _, third = runs
    assert _lca_rows(second) != _lca_rows(first)
    assert _lca_rows(third) == _lca_rows(first)  # back under WordNet: nothing of the K-means run remains
    written = read_suite(run_dir)
    assert written["hierarchy"] == first["hierarchy"] and _lca_rows(written) == _lca_rows(first)


def test_a_hierarchy_that_cannot_be_used_is_refused_before_any_work(val_layouts, tmp_path):
    subset, _ = _kmeans_build(tmp_path / "subset", 12, "present")
    val = build_val(val_layouts, "folders", tmp_path / "val")
    cases = {
        tmp_path / "nothing": r"hierarchy .*nothing: not a built hierarchy folder",
        val: r"hierarchy .*: a imagenet_val dataset, expected a wordnet_hierarchy or kmeans_hierarchy folder",
        subset: r"hierarchy .*: a hierarchy over 12 other classes, expected the 1000 ImageNet-1k classes",
    }
    for hierarchy, message in cases.items():
        with pytest.raises(ConfigError, match=message):
            check_arguments(tmp_path / "run", _options(hierarchy))
    assert not (tmp_path / "run").exists()


def test_the_calibration_bins_are_kept_and_report_html_draws_the_reliability_diagram(runs, val_images):
    """suite.json keeps each report's calibration bins (issue 39: the reliability diagram of report.html):
    torchmetrics' 15 bins (+ the confidence-1 bin) of the run's own outputs, as the scoring code bins them."""
    run_dir, first, *_ = runs
    bins = read_suite(run_dir / "suite.json")["datasets"]["imagenet_val"]["reliability"]
    assert set(bins) == set(CalibrationOptions().ece_conventions)
    outputs = ModelOutputs.load(run_dir / "outputs" / "imagenet_val.pt")
    label_of = {im.image_id: im.label for im in val_images}
    probabilities = torch.softmax(outputs.values.float(), dim=1)
    confidence, top1 = probabilities.max(dim=1)
    correct = top1 == torch.tensor([label_of[i] for i in outputs.ids])
    expected = calibration_bins(confidence, correct, DEFAULT_ECE_CONVENTION)
    found = CalibrationBins.from_json(DEFAULT_ECE_CONVENTION, bins[DEFAULT_ECE_CONVENTION])
    assert found.count.tolist() == expected.count.tolist() and found.correct.tolist() == expected.correct.tolist()
    assert found.confidence_sum.tolist() == pytest.approx(expected.confidence_sum.tolist(), abs=1e-5)
    ece = next(r["value"] for r in first["datasets"]["imagenet_val"]["metrics"] if r["metric"] == "ece"
               and r["variant"] == DEFAULT_ECE_CONVENTION)  # fmt: skip
    assert found.expected_calibration_error == pytest.approx(ece, abs=1e-6) and found.total == len(val_images)
    page = (run_dir / "report.html").read_text()
    caption = "<figcaption>Reliability diagram (imagenet_val)</figcaption>"
    assert caption in page and page.split(caption, 1)[1].lstrip().startswith("<svg")
