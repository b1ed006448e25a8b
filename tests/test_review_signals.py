"""Review fields from every signal (issue 17, items 1-3): the 11 OOD detectors' scores, unit-test verdicts,
the WordNet pre-check, detector and reviewer disagreements, look-alikes from a FiftyOne Brain index.

Every number is checked against the scorer's own: ``score()``'s OOD report rows and
``detector_scores`` on the same inputs. Look-alikes are planted: two ImageNet reference images get
features nearly equal to one OOD sample's, and must come first.
"""

from __future__ import annotations

import math

import pytest
import torch

from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.errors import ConfigError
from imagenet_suite.hierarchies.ood_precheck import precheck_summary
from imagenet_suite.review import lookalikes
from imagenet_suite.review.decision_table import Decision, DecisionTable, write_decision_table
from imagenet_suite.review.decisions import export_decisions
from imagenet_suite.review.errors import ReviewError
from imagenet_suite.review.load import LoadOptions, load_for_review
from imagenet_suite.review.status import review_status
from imagenet_suite.scoring.evaluation.options import OodOptions, ScoreOptions
from imagenet_suite.scoring.evaluation.report import score
from imagenet_suite.scoring.metrics.ood_detector_stats import DetectorStats, Embeddings
from imagenet_suite.scoring.metrics.ood_detectors import DETECTORS, NEEDS_FEATURES, detector_scores
from imagenet_suite.scoring.outputs import ModelOutputs
from tests.fixtures.review_datasets import (
    CLASSES,
    app_tags,
    build_tiny_ood,
    signal_arguments,
    tiny_ood_ids,
    write_signal_inputs,
)
from tests.fixtures.review_mongo import fiftyone_on_private_db, shared_mongod
from tests.helpers import build_val

IDS = tiny_ood_ids()
PLANTED_FOR = IDS[0]
READABLE = "bagel,police dog,waffles"  # donuts shown as bagel (an ImageNet class), s_sky as police dog
NAMES = dict(zip(sorted(CLASSES), READABLE.split(",")))  # the OOD sample two reference images are made to look like


@pytest.fixture(scope="module")
def fo():
    return fiftyone_on_private_db()


@pytest.fixture(scope="module")
def setup(tmp_path_factory, val_layouts):
    root = tmp_path_factory.mktemp("signals")
    folder = build_tiny_ood(root / "out", builder_options={"readable": READABLE})
    val = build_val(val_layouts, "folders", root / "val")
    reference_ids = DatasetFolder(val).read_table(None, None, ["id"]).column("id").to_pylist()
    inputs = write_signal_inputs(root, IDS, reference_ids)
    planted = [reference_ids[3], reference_ids[7]]
    id_h = inputs["id_h"].clone()
    target = inputs["ood_h"][IDS.index(PLANTED_FOR)]
    id_h[inputs["id_ids"].index(planted[0])] = target + 1e-4
    id_h[inputs["id_ids"].index(planted[1])] = target + 3e-3 * torch.arange(target.numel())
    Embeddings(id_h.float(), inputs["id_ids"]).save(inputs["id_features"])
    return folder, val, inputs, planted


@pytest.fixture(scope="module")
def loaded(fo, setup, tmp_path_factory):
    folder, val, inputs, _ = setup
    return load_for_review(
        folder,
        options=LoadOptions(
            **signal_arguments(inputs), reference=val, name="signals", cache_dir=tmp_path_factory.mktemp("cache")
        ),
    )


def _scorer(inputs):
    """What the scorer computes from the same files: per detector the OOD scores and its report rows."""
    outputs = ModelOutputs.load(inputs["outputs"])
    stats = DetectorStats.load(inputs["stats"])
    features = Embeddings.load(inputs["features"]).aligned(list(outputs.ids), "ood")
    own = {
        d: dict(
            zip(
                outputs.ids,
                detector_scores(d, outputs.values, "logits", features if d in NEEDS_FEATURES else None, stats).tolist(),
            )
        )
        for d in DETECTORS
    }
    return own, stats


def test_every_detector_score_and_unit_test_verdict_is_the_scorers(loaded, setup):
    folder, _, inputs, _ = setup
    dataset = loaded
    info = dataset.info["imagenet_suite"]
    assert info["detectors"]["ran"] == list(DETECTORS) and info["detectors"]["skipped"] == {}
    own, stats = _scorer(inputs)
    ood = dataset.match(fo_field("is_reference") != True)  # noqa: E712
    rows = ood.values("row_id")
    assert sorted(rows) == sorted(IDS)
    for detector in DETECTORS:
        values = dict(zip(rows, ood.values(f"ood_{detector}")))
        assert values == pytest.approx(own[detector], rel=1e-12, abs=1e-12), detector

    report = score(
        folder,
        ModelOutputs.load(inputs["outputs"]),
        metrics=["ood_detection"],
        options=ScoreOptions(
            ood=OodOptions(
                id_outputs=ModelOutputs.load(inputs["id_outputs"]),
                id_features=Embeddings.load(inputs["id_features"]),
                ood_features=Embeddings.load(inputs["features"]),
                stats=stats,
            )
        ),
    ).table
    fpr = report[(report["metric"] == "fpr95") & (report["subgroup"] != "")]
    scorer_fpr = {(r.variant, r.subgroup): r.value for r in fpr.itertuples()}
    assert len(scorer_fpr) == len(DETECTORS) * len(CLASSES)
    unit = info["unit_tests"]
    assert unit["threshold"] == 0.10
    assert {(d, c): v for d, per in unit["fpr95"].items() for c, v in per.items()} == pytest.approx(scorer_fpr)
    classes = dict(zip(rows, ood.values("ground_truth.raw_label")))
    failed = dict(zip(rows, ood.values("ood_failed_detectors")))
    accepted = dict(zip(rows, ood.values("ood_id_like_for")))
    for row_id in rows:
        expected = [d for d in DETECTORS if scorer_fpr[(d, classes[row_id])] > 0.10]
        assert failed[row_id] == expected
    for (detector, name), value in scorer_fpr.items():  # accepted as ID at tau95 = the FPR@95 false positives
        members = [r for r in rows if classes[r] == name]
        assert sum(detector in accepted[r] for r in members) / len(members) == pytest.approx(value)


def test_views_of_the_signals(loaded, setup):
    _, _, inputs, _ = setup
    dataset = loaded
    own, _ = _scorer(inputs)
    views = set(dataset.list_saved_views())
    assert {f"most_id_like: {d}" for d in DETECTORS} <= views
    assert {"precheck_suspects", "failed_unit_tests", "detector_disagreements", "lookalike_suspects"} <= views
    for detector in DETECTORS:
        ranked = dataset.load_saved_view(f"most_id_like: {detector}").values("row_id")
        assert [own[detector][r] for r in ranked] == sorted(own[detector].values(), reverse=True)
    rows, failed, accepted, verdicts = dataset.match(fo_field("is_ood") == True).values(  # noqa: E712
        ["row_id", "ood_failed_detectors", "ood_id_like_for", "precheck_verdict"]
    )
    assert set(dataset.load_saved_view("failed_unit_tests").values("row_id")) == {r for r, f in zip(rows, failed) if f}
    disagree = {r for r, a in zip(rows, accepted) if 0 < len(a) < len(DETECTORS)}
    assert disagree and set(dataset.load_saved_view("detector_disagreements").values("row_id")) == disagree
    suspects = {r for r, v in zip(rows, verdicts) if v in ("categorical suspect", "close relative")}
    assert suspects and set(dataset.load_saved_view("precheck_suspects").values("row_id")) == suspects
    assert "reviewer_disagreements" not in views  # no other reviewer's table was loaded


def test_precheck_fields_per_class(loaded):
    info = loaded.info["imagenet_suite"]["precheck"]
    for raw, name in NAMES.items():
        expected = precheck_summary([name])[0]
        assert (info[raw]["verdict"], info[raw]["classes"]) == (expected["verdict"], expected["classes"])
        view = loaded.match(fo_field("ground_truth.raw_label") == raw)
        assert set(view.values("precheck_verdict")) == {expected["verdict"]}
        assert all(c == expected["classes"] for c in view.values("precheck_classes"))
    assert [info[raw]["verdict"] for raw in sorted(NAMES)] == ["categorical suspect", "close relative", "no match"]
    assert "n02106662" in info["s_sky"]["classes"]  # police dog -> German shepherd


def test_nearest_neighbours_return_the_planted_lookalikes_first(loaded, setup):
    *_, planted = setup
    near = lookalikes.nearest_id_images(loaded, PLANTED_FOR, k=3)
    assert [r for r, _, _ in near[:2]] == planted
    assert near[0][2] < near[1][2] < near[2][2] and near[0][2] == pytest.approx(0.0, abs=1e-6)
    labels = dict(
        zip(*loaded.match(fo_field("is_reference") == True).values(["row_id", "ground_truth.label"]))  # noqa: E712
    )
    assert [c for _, c, _ in near] == [labels[lookalikes.reference_row_id(r)] for r, _, _ in near]
    sample = loaded.match(fo_field("row_id") == PLANTED_FOR).first()
    assert [c.row_id for c in sample.lookalikes.classifications[:2]] == planted  # the stored field agrees
    assert [c.label for c in sample.lookalikes.classifications[:3]] == [c for _, c, _ in near]
    assert loaded.load_saved_view("lookalike_suspects").first().row_id == PLANTED_FOR
    view = loaded.load_saved_view(f"lookalikes: {PLANTED_FOR}")
    assert view.values("row_id")[:3] == [PLANTED_FOR, *map(lookalikes.reference_row_id, planted)]
    assert len(loaded.match(fo_field("is_reference") == True)) == 12  # noqa: E712


def test_references_stay_out_of_review_status_and_export(loaded, tmp_path):
    assert review_status(loaded)["samples"] == len(IDS)
    assert len(loaded.load_saved_view("unreviewed")) == len(IDS)
    table, _ = export_decisions(loaded, tmp_path / "d.csv")
    assert table.decisions == ()


def test_embeddings_plot(loaded, tmp_path):
    assert {lookalikes.BRAIN_KEY, lookalikes.PLOT_KEY} <= set(loaded.list_brain_runs())
    path = lookalikes.write_embeddings_plot(loaded, tmp_path / "plot.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_reload_is_idempotent(loaded, setup, tmp_path):
    folder, val, inputs, _ = setup
    before = len(loaded)
    again = load_for_review(
        folder,
        options=LoadOptions(**signal_arguments(inputs), reference=val, name="signals", cache_dir=tmp_path / "cache"),
    )
    assert len(again) == before == len(IDS) + 12


def test_outputs_only_give_the_logit_detectors_with_the_top_fraction_rule(fo, setup, tmp_path):
    folder, _, inputs, _ = setup
    dataset = load_for_review(
        folder, options=LoadOptions(outputs=inputs["outputs"], name="signals-logits", cache_dir=tmp_path / "c")
    )
    info = dataset.info["imagenet_suite"]["detectors"]
    assert info["ran"] == ["msp", "maxlogit", "energy"] and "unit_tests" not in dataset.info["imagenet_suite"]
    assert "needs fitted train statistics" in info["skipped"]["kl_matching"]
    assert "needs penultimate features" in info["skipped"]["mahalanobis"]
    top = math.ceil(0.05 * len(IDS))
    assert sum("msp" in a for a in dataset.values("ood_id_like_for")) == top
    assert "failed_unit_tests" not in dataset.list_saved_views()


def test_reviewer_disagreements(fo, setup, tmp_path):
    folder, _, inputs, _ = setup
    other = DecisionTable(
        (
            Decision(IDS[0], "id", "bob", "", "", "categorical"),
            Decision(IDS[1], "ood", "bob", "", "", "none"),
            Decision(IDS[2], "id", "bob", "", "", "incidental", "background"),
            Decision(IDS[3], "ood", "bob"),
        ),
        dataset="x",
    )
    write_decision_table(other, tmp_path / "bob.csv")
    dataset = load_for_review(
        folder,
        options=LoadOptions(
            outputs=inputs["outputs"], other_review=tmp_path / "bob.csv", name="signals-two", cache_dir=tmp_path
        ),
    )
    app_tags(fo, dataset, [IDS[0]], {"id": True, "contamination:categorical": True})  # agrees
    app_tags(fo, dataset, [IDS[1]], {"id": True})  # decision differs
    app_tags(fo, dataset, [IDS[2]], {"id": True, "contamination:categorical": True})  # type differs
    app_tags(fo, dataset, [IDS[4]], {"ood": True})  # bob did not decide it
    view = dataset.load_saved_view("reviewer_disagreements")
    assert sorted(view.values("row_id")) == sorted([IDS[1], IDS[2]])
    assert dataset.match(fo_field("row_id") == IDS[0]).first().review_other_reviewer == "bob"


def test_bad_signal_inputs_are_refused_before_anything_is_written(fo, setup, tmp_path):
    folder, val, inputs, _ = setup
    before = set(fo.list_datasets())
    cases = [
        (dict(id_outputs=inputs["id_outputs"]), ConfigError, "need outputs"),
        (dict(outputs=inputs["outputs"], reference=val), ConfigError, "^reference needs features"),
        (
            dict(outputs=inputs["outputs"], id_outputs=inputs["id_outputs"], features=inputs["features"]),
            ConfigError,
            "needs id_features",
        ),
        (dict(outputs=inputs["outputs"], features=tmp_path / "missing.pt"), ConfigError, "does not exist"),
        (
            dict(outputs=inputs["outputs"], features=inputs["features"], reference=val, id_features=inputs["features"]),
            Exception,
            "ids have no features",
        ),
        (dict(outputs=inputs["outputs"], fail_threshold=2.0), ConfigError, "expected an FPR between 0 and 1"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            load_for_review(folder, options=LoadOptions(name="bad-signals", cache_dir=tmp_path, **kwargs))
    assert set(fo.list_datasets()) == before
    with pytest.raises(ReviewError, match="no look-alike index"):
        lookalikes.nearest_id_images(
            load_for_review(folder, options=LoadOptions(name="no-index", cache_dir=tmp_path)), IDS[0]
        )


def test_cli_review_load_with_every_signal(fo, setup, tmp_path, capsys):
    from imagenet_suite.cli import main

    folder, val, inputs, planted = setup
    flags = {"--outputs": "outputs", "--id-outputs": "id_outputs", "--features": "features"}
    flags.update({"--id-features": "id_features", "--detector-stats": "stats"})
    args = [x for flag, key in flags.items() for x in (flag, str(inputs[key]))]
    plot = tmp_path / "plot.png"
    code = main(
        ["review", "load", str(folder), *args, "--reference", str(val), "--embeddings-plot", str(plot)]
        + ["--name", "signals-cli", "--cache-dir", str(tmp_path), "--database-uri", shared_mongod().uri]
    )
    out, err = capsys.readouterr()
    assert (code, out) == (0, "dataset: signals-cli\n") and f"wrote {plot}" in err
    dataset = fo.load_dataset("signals-cli")
    assert dataset.info["imagenet_suite"]["detectors"]["ran"] == list(DETECTORS)
    assert [r for r, _, _ in lookalikes.nearest_id_images(dataset, PLANTED_FOR, 2)] == planted
    assert plot.stat().st_size > 0


def fo_field(name: str):
    from fiftyone import ViewField as F

    return F(name)
