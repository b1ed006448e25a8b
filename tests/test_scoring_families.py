"""The evaluator's structure: an explicit family list, one options type per family, scoped thread settings."""

from __future__ import annotations

import ast
import dataclasses
import subprocess
import sys
import threading

import numpy as np
import pytest
import torch

from imagenet_suite.errors import ConfigError
from imagenet_suite.scoring import (
    FAMILIES,
    CalibrationOptions,
    ClassBalanceOptions,
    LcaOptions,
    MetricFamily,
    MetricRow,
    ModelOutputs,
    OodOptions,
    ScoreOptions,
    TopkOptions,
    score,
)
from imagenet_suite.scoring.threads import chunk_parallel_cpu, cpu_workers, torch_threads
from tests.helpers import REPO_ROOT
from tests.test_scoring_join import val_like_folder

EXPECTED_FAMILIES = [
    "topk_accuracy",
    "per_class_accuracy",
    "calibration",
    "class_balance",
    "real_accuracy",
    "shape_bias",
    "accuracy16",
    "lca",
    "multilabel",
    "multilabel_real",
    "multilabel_accuracy",
    "ood_detection",
    "ood_detection_datasets",
    "ood_detection_set",
    "ood_unit_tests",
    "mapped_topk_accuracy",
    "robustness",
    "robustness16",
]
ROWS = 60


@pytest.fixture(scope="module")
def val(tmp_path_factory):
    labels = np.random.default_rng(0).integers(0, 1000, ROWS)
    folder = val_like_folder(tmp_path_factory.mktemp("families"), labels.tolist())
    logits = torch.randn(ROWS, 1000, generator=torch.Generator().manual_seed(0))
    logits[torch.arange(ROWS), torch.from_numpy(labels)] += 4
    return folder, ModelOutputs(logits, [f"ILSVRC2012_val_{i + 1:08d}" for i in range(ROWS)])


def count_in_a_new_thread() -> int:
    """torch's thread count as a thread started now sees it (torch's default for new threads)."""
    seen = []
    worker = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    worker.start()
    worker.join(timeout=60)
    return seen[0]


@pytest.fixture
def three_threads():
    """torch set to 3 intra-op threads for the test (the test checks scoring keeps it), restored after."""
    before = torch.get_num_threads()
    torch.set_num_threads(3)
    yield 3
    torch.set_num_threads(before)


# ----------------------------------------------------------------------------- the explicit family list


def test_families_are_one_explicit_tuple_in_report_order():
    assert isinstance(FAMILIES, tuple) and all(isinstance(f, MetricFamily) for f in FAMILIES)
    assert [family.name for family in FAMILIES] == EXPECTED_FAMILIES


IMPORT_EVERYTHING = """
import importlib, pkgutil
from imagenet_suite.scoring import families
from imagenet_suite.scoring.evaluation import report
import imagenet_suite.scoring as scoring

datasets = [({"label": {"_type": "ClassLabel", "names": ["x"]}}, {}), ({"real_labels": {}}, {}),
            ({"test": {}}, {"ood": {"group_column": "test"}}), ({"corruption": {}, "severity": {}, "label": {}}, {})]
before = (list(families.FAMILIES), [report.applicable_metrics(f, p) for f, p in datasets])
for module in pkgutil.walk_packages(scoring.__path__, "imagenet_suite.scoring."):
    importlib.import_module(module.name)
after = (list(families.FAMILIES), [report.applicable_metrics(f, p) for f, p in datasets])
assert before == after, (before, after)
print("unchanged", len(after[0]))
"""


def test_importing_every_scoring_module_changes_no_family():
    """A fresh interpreter: the families (and what applies) are the same before and after importing every module."""
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING], capture_output=True, text=True, cwd=REPO_ROOT, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"unchanged {len(EXPECTED_FAMILIES)}"


def test_scoring_modules_do_nothing_when_imported():
    """Module bodies only define names: no top-level calls, loops or with-blocks (no registration on import)."""
    offenders = []
    for path in sorted((REPO_ROOT / "imagenet_suite" / "scoring").rglob("*.py")):
        for statement in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(statement, (ast.For, ast.While, ast.With)) or (
                isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call)
            ):
                offenders.append(f"{path.relative_to(REPO_ROOT)}:{statement.lineno}")
    assert offenders == []


def test_a_new_family_runs_only_when_passed(val):
    folder, outputs = val
    ran = []
    family = MetricFamily("spy", ("label",), lambda f, p: True, lambda ctx, options: ran.append(1) or [])
    assert "spy" not in score(folder, outputs, metrics=["topk_accuracy"], families=FAMILIES).meta["metrics"]
    assert ran == []
    assert score(folder, outputs, metrics=["spy"], families=(*FAMILIES, family)).meta["metrics"] == ["spy"]
    assert ran == [1]
    with pytest.raises(ConfigError, match="unknown metric 'spy'; known metrics: "):
        score(folder, outputs, metrics=["spy"])


# ----------------------------------------------------------------------------- one options type per family


def test_score_options_hold_one_instance_per_family_type():
    options = ScoreOptions()
    assert {slot.name: type(getattr(options, slot.name)) for slot in dataclasses.fields(options)} == {
        "topk": TopkOptions,
        "calibration": CalibrationOptions,
        "class_balance": ClassBalanceOptions,
        "lca": LcaOptions,
        "ood": OodOptions,
    }
    for family in FAMILIES:
        if family.options is not None:
            assert type(options.of(family.options)) is family.options
    declared = {family.name: family.options for family in FAMILIES}
    assert declared["lca"] is LcaOptions and declared["calibration"] is CalibrationOptions
    assert declared["ood_unit_tests"] is OodOptions and declared["real_accuracy"] is TopkOptions
    assert declared["per_class_accuracy"] is None and declared["robustness"] is None


def test_options_are_frozen_and_typed():
    options = ScoreOptions(lca=LcaOptions(distances=("info",)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.lca = LcaOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.lca.distances = ("depth_one_sided",)
    with pytest.raises(ConfigError, match="ScoreOptions.lca must be a LcaOptions, got tuple"):
        ScoreOptions(lca=("info",))
    with pytest.raises(ConfigError, match="ScoreOptions holds no Unknown"):
        ScoreOptions().of(type("Unknown", (), {}))


def test_each_family_gets_its_own_options_instance(val):
    folder, outputs = val
    seen = {}

    def spy(name):
        def compute(ctx, options):
            seen[name] = options
            return []

        return compute

    spies = (
        MetricFamily("lca_spy", ("label",), lambda f, p: True, spy("lca_spy"), LcaOptions),
        MetricFamily("plain_spy", ("label",), lambda f, p: True, spy("plain_spy")),
    )
    options = ScoreOptions(lca=LcaOptions(distances=("info",)), topk=TopkOptions(ks=(1, 3)))
    score(folder, outputs, metrics=["lca_spy", "plain_spy"], options=options, families=(*FAMILIES, *spies))
    assert seen == {"lca_spy": options.lca, "plain_spy": None}


def test_family_options_change_only_their_family(val):
    folder, outputs = val
    options = ScoreOptions(
        topk=TopkOptions(ks=(1, 3)),
        class_balance=ClassBalanceOptions(conventions=("paper_eq11",)),
        calibration=CalibrationOptions(ece_conventions=("guo",), class_wise_ace=False),
    )
    report = score(folder, outputs, metrics=["topk_accuracy", "calibration", "class_balance"], options=options)
    default = score(folder, outputs, metrics=["topk_accuracy", "calibration", "class_balance"])
    assert [r.metric for r in report.rows if r.metric.startswith("top")] == ["top1_accuracy", "top3_accuracy"]
    assert [(r.metric, r.variant) for r in report.rows if r.metric == "ece"] == [("ece", "guo")]
    assert {r.variant for r in report.rows if r.metric.startswith("class_balance")} == {"paper_eq11"}
    assert report.value("top1_accuracy") == default.value("top1_accuracy")
    assert report.value("ece", "guo") == default.value("ece", "guo")


# ----------------------------------------------------------------------------- scoped thread settings


def test_torch_threads_restores_after_exit_error_and_nesting(three_threads):
    with torch_threads(1):
        assert torch.get_num_threads() == 1
        with torch_threads(2):
            assert torch.get_num_threads() == 2
        assert torch.get_num_threads() == 1  # the enclosing scope's count again
    assert torch.get_num_threads() == three_threads
    with pytest.raises(RuntimeError, match="boom"), torch_threads(1):
        raise RuntimeError("boom")
    assert torch.get_num_threads() == three_threads
    with pytest.raises(ValueError, match="positive"), torch_threads(0):
        pass
    assert count_in_a_new_thread() == three_threads


def test_overlapping_scopes_on_two_threads_restore_the_first_count(three_threads):
    entered, first_left = threading.Barrier(2), threading.Event()
    inside = []

    def first():
        with torch_threads(1):
            entered.wait()
        first_left.set()

    def second():
        with torch_threads(1):
            entered.wait()
            first_left.wait()
            inside.append(torch.get_num_threads())  # the other scope closed; this one still holds 1

    workers = [threading.Thread(target=first), threading.Thread(target=second)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert inside == [1] and torch.get_num_threads() == three_threads
    assert count_in_a_new_thread() == three_threads  # the default for new threads is restored too


def test_chunk_parallel_cpu_is_scoped(three_threads):
    outside = cpu_workers()
    with chunk_parallel_cpu():
        assert torch.get_num_threads() == 1 and cpu_workers() == outside
        with chunk_parallel_cpu():  # nested: a no-op
            assert cpu_workers() == outside
    assert torch.get_num_threads() == three_threads and cpu_workers() == outside


def test_score_leaves_torch_threads_as_it_found_them(val, three_threads):
    folder, outputs = val
    workers, during = cpu_workers(), []

    def probe(ctx, options):
        during.append((torch.get_num_threads(), cpu_workers()))
        return [MetricRow("probe", 0.0)]

    def fail(ctx, options):
        raise RuntimeError("a family failed")

    families = (
        *FAMILIES,
        MetricFamily("probe", ("label",), lambda f, p: True, probe),
        MetricFamily("fail", ("label",), lambda f, p: True, fail),
    )
    score(folder, outputs, families=families, metrics=["topk_accuracy", "calibration", "probe"])
    assert torch.get_num_threads() == three_threads and count_in_a_new_thread() == three_threads
    assert during == [(1, workers)]  # single-threaded torch while scoring, chunks over the workers
    with pytest.raises(RuntimeError, match="a family failed"):
        score(folder, outputs, families=families, metrics=["fail"])
    assert torch.get_num_threads() == three_threads
