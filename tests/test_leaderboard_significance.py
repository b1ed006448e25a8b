"""``leaderboard``'s 95 % intervals and paired tests of adjacent models (issue 26), on run folders whose
suite.json and ``uncertainty/`` files are written by the same code as ``evaluate``'s (the per-image results
are chosen here, the bootstrap is the package's).

The p-values are checked against independent computations: McNemar against scipy's exact binomial test
on the discordant images counted here; the paired bootstrap against its formula on replicates recomputed
here from the resample counts. Bad run folders (a file changed after evaluate, a missing file, other seeds,
other images) are one stderr line; a run without intervals is listed, its tests left out.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from imagenet_suite import cli
from imagenet_suite.scoring.metrics.paired_tests import percentile_interval
from imagenet_suite.scoring.metrics.uncertainty import bootstrap_counts, group_means, proportion
from imagenet_suite.scoring.summary.intervals import Bootstrap, bootstrap_summary, resample_report, write_uncertainty
from imagenet_suite.scoring.summary.suite import suite_summary
from tests.helpers import one_line
from tests.test_read_runs import build, leaderboard, report, suite_json

IDS = [f"ILSVRC2012_val_{i:08d}" for i in range(1, 61)]
EXPERT_IDS = [f"ml{i:03d}" for i in range(30)]
CLASSES = torch.arange(30) % 3
RESAMPLES = 300


def _expert_report(value: float) -> dict:
    """An ``imagenet_multilabel`` report whose headline is the class-averaged accuracy (not a share of images)."""
    scored = build("c" * 64, "imagenet_multilabel")
    found = report("imagenet_multilabel", value, scored)
    found["metrics"] = [{"metric": "multilabel_accuracy", "variant": "lenient", "subgroup": "", "value": value}]
    return found


def _class_mean(hits: torch.Tensor) -> float:
    return float(np.mean([hits[c == CLASSES].double().mean() for c in range(3)]))


def write_bootstrapped_run(
    root: Path, name: str, hits: torch.Tensor, expert: torch.Tensor, seed: int = 0, ids=IDS
) -> Path:
    """A run folder as evaluate writes it with ``--bootstrap``: ImageNet val (``hits`` per image of ``ids``) and
    the expert multi-labels (``expert`` per image)."""
    suite = suite_json(name, float(hits.double().mean()), imagenet_multilabel=_expert_report(_class_mean(expert)))
    estimates = {
        "imagenet_val": {("top1_accuracy", "", ""): proportion(ids, hits)},
        "imagenet_multilabel": {
            ("multilabel_accuracy", "lenient", ""): group_means(EXPERT_IDS, expert.double(), CLASSES)
        },
    }
    bootstrap = Bootstrap(RESAMPLES, seed)
    replicated = {key: resample_report(suite["datasets"][key], found, bootstrap) for key, found in estimates.items()}
    summary = suite["summary"]
    record, table = bootstrap_summary(suite["datasets"], replicated, summary, bootstrap, params_millions=0.001)
    run = root / name.replace(":", "_")
    run.mkdir()
    summary["uncertainty"] = write_uncertainty(run, record, table, replicated, summary["accuracies"])
    (run / "suite.json").write_text(json.dumps(suite))
    return run


def _hits(wrong: list[int], n: int = 60) -> torch.Tensor:
    hits = torch.ones(n, dtype=torch.bool)
    hits[wrong] = False
    return hits


@pytest.fixture
def three_runs(tmp_path) -> list[Path]:
    first = write_bootstrapped_run(tmp_path, "timm:a", _hits(list(range(0, 60, 10))), _hits([0, 1, 5], 30))
    second = write_bootstrapped_run(tmp_path, "timm:b", _hits(list(range(0, 60, 6))), _hits([0, 1, 2, 3, 4, 7], 30))
    third = write_bootstrapped_run(tmp_path, "timm:c", _hits(list(range(0, 60, 2))), _hits(list(range(0, 30, 2)), 30))
    return [first, second, third]


def test_adjacent_accuracies_get_mcnemar_and_the_class_mean_a_paired_bootstrap(tmp_path, three_runs):
    assert cli.main(leaderboard(tmp_path, *three_runs)) == 0
    board = tmp_path / "board"
    tests = pd.read_csv(board / "leaderboard_significance.csv")
    val = tests[tests["ranking"] == "accuracy: imagenet_val"].set_index("model")
    assert val["rank"].to_dict() == {"timm:a": 1, "timm:b": 2, "timm:c": 3}
    assert val.loc["timm:a", "next_model"] == "timm:b" and val.loc["timm:a", "test"] == "McNemar (exact)"
    # a is wrong on 0, 10, ..., 50, b on 0, 6, ..., 54: b alone is right on 10, 20, 40, 50, a alone on the
    # other 8 of b's; c is wrong on every even image, so b alone is right on 20 and c alone on none
    assert val.loc["timm:a", "p_value"] == pytest.approx(stats.binomtest(4, 12, 0.5).pvalue)
    assert val.loc["timm:b", "p_value"] == pytest.approx(stats.binomtest(0, 20, 0.5).pvalue)
    assert val.loc["timm:a", "note"] == "8 images right only for the first, 4 only for the second"
    assert pd.isna(val.loc["timm:c", "test"])  # the last model has no one below it

    expert = tests[tests["ranking"] == "accuracy: imagenet_multilabel"].set_index("model")
    assert expert.loc["timm:a", "test"] == "paired bootstrap"
    counts = bootstrap_counts(0, EXPERT_IDS, range(RESAMPLES)).double()
    onehot = torch.nn.functional.one_hot(CLASSES, 3).double()

    def replicates(hits: torch.Tensor) -> np.ndarray:  # per class, the drawn share right; then the mean
        return ((counts @ (onehot * hits.double()[:, None])) / (counts @ onehot)).mean(dim=1).numpy()

    a, b = replicates(_hits([0, 1, 5], 30)), replicates(_hits([0, 1, 2, 3, 4, 7], 30))
    tail = min(((a - b) <= 0).sum(), ((a - b) >= 0).sum())
    assert expert.loc["timm:a", "p_value"] == pytest.approx(min(1.0, 2 * (1 + tail) / (RESAMPLES + 1)))
    assert expert.loc["timm:a", ["value_ci_low", "value_ci_high"]].tolist() == pytest.approx(percentile_interval(a))

    intervals = pd.read_csv(board / "leaderboard_intervals.csv", index_col="model")
    suite = json.loads((three_runs[1] / "suite.json").read_text())
    low, high = suite["summary"]["uncertainty"]["ci95"]["accuracies.imagenet_val.value"]
    assert intervals.loc[
        "timm:b", ["accuracies.imagenet_val.value_ci_low", "accuracies.imagenet_val.value_ci_high"]
    ].tolist() == [low, high]
    text = (board / "leaderboard.md").read_text()
    assert "### accuracy: imagenet_val" in text and f"0.8333 [{low:.4g}, {high:.4g}]" in text


NO_TORCH = textwrap.dedent(
    """
    import sys

    class NoTorch:  # an import of torch fails, wherever it comes from
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] == "torch":
                raise ImportError(f"the leaderboard imported {name}")

    sys.meta_path.insert(0, NoTorch())
    from imagenet_suite.cli import main

    sys.exit(main())
    """
)


def test_the_leaderboard_never_imports_torch_and_writes_the_same_files(tmp_path, three_runs):
    """A leaderboard reads runs and runs no torch: in a fresh process where importing torch fails, it writes the
    files an in-process run writes, byte for byte (torch takes 3 s of CPU to import)."""
    args = leaderboard(tmp_path, *three_runs)
    assert cli.main(args) == 0
    fresh = tmp_path / "fresh"
    command = [sys.executable, "-c", NO_TORCH, *args[:-1], str(fresh)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    written = sorted(path.name for path in (tmp_path / "board").iterdir())
    assert "leaderboard_significance.csv" in written and sorted(path.name for path in fresh.iterdir()) == written
    assert all((fresh / name).read_bytes() == (tmp_path / "board" / name).read_bytes() for name in written)


def _changed_replicates(runs):
    path = runs[0] / "uncertainty" / "replicates.parquet"
    path.write_bytes(path.read_bytes() + b"\0")
    return r"replicates.parquet: not the file suite.json names .*run evaluate again"


def _missing_correctness(runs):
    (runs[1] / "uncertainty" / "imagenet_val.parquet").unlink()
    return r"imagenet_val.parquet: missing, though suite.json's summary.uncertainty names it"


@pytest.mark.parametrize("damage", [_changed_replicates, _missing_correctness], ids=["changed", "missing"])
def test_a_changed_or_missing_uncertainty_file_is_one_line(tmp_path, three_runs, capsys, damage):
    expected = damage(three_runs)
    assert __import__("re").search(expected, one_line(capsys, leaderboard(tmp_path, *three_runs)))


def test_runs_bootstrapped_with_other_seeds_or_on_other_images_are_refused(tmp_path, capsys):
    first = write_bootstrapped_run(tmp_path, "timm:a", _hits([1, 2]), _hits([1], 30))
    other_seed = write_bootstrapped_run(tmp_path, "timm:b", _hits([3]), _hits([2], 30), seed=5)
    line = one_line(capsys, leaderboard(tmp_path, first, other_seed))
    assert "bootstraps cannot be paired" in line and "seed 5" in line and "the same bootstrap seed" in line
    other_ids = [f"other_{i}" for i in range(60)]
    other_images = write_bootstrapped_run(tmp_path, "timm:c", _hits([3]), _hits([2], 30), ids=other_ids)
    line = one_line(capsys, leaderboard(tmp_path, first, other_images))
    assert "cannot be paired on accuracies.imagenet_val.value: the runs resampled other images of imagenet_val" in line


def _correctness(run: Path):
    from imagenet_suite.scoring.summary.uncertainty_files import read_correctness

    summary = json.loads((run / "suite.json").read_text())["summary"]
    return read_correctness(run, summary["uncertainty"], "imagenet_val", summary["accuracies"]["imagenet_val"]["value"])


def _reversed_correctness(run: Path, into: Path) -> Path:
    """A copy of ``run`` whose ImageNet-val correctness file lists its images in reverse id order (what a
    writer not sorting by id would store), with suite.json's record of it updated."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    from imagenet_suite.scoring.summary.uncertainty_files import CORRECT_FORMAT, _parquet, _sha256

    shutil.copytree(run, into)
    path = into / "uncertainty" / "imagenet_val.parquet"
    table = pq.read_table(path)
    table = table.take(pa.array(range(table.num_rows - 1, -1, -1)))
    path.write_bytes(_parquet(table, {"format": CORRECT_FORMAT, "key": "imagenet_val"}))
    suite = json.loads((into / "suite.json").read_text())
    suite["model"] = "timm:r"
    suite["summary"]["uncertainty"]["files"]["correct"]["imagenet_val"]["sha256"] = _sha256(path.read_bytes())
    (into / "suite.json").write_text(json.dumps(suite))
    return into


def test_runs_listing_their_images_in_another_order_are_paired_by_id(tmp_path, monkeypatch):
    """Two runs of the same images store their ids alike (evaluate writes them sorted by id): paired image by
    image without an id decoded. A file listing the same images in another order is paired by id (the same
    McNemar counts); one of other images is not paired."""
    from imagenet_suite.scoring.summary.uncertainty_files import Correctness

    a_hits, b_hits = _hits(list(range(0, 60, 10))), _hits(list(range(0, 60, 6)))
    first = write_bootstrapped_run(tmp_path, "timm:a", a_hits, _hits([0, 1, 5], 30))
    same = write_bootstrapped_run(tmp_path, "timm:b", b_hits.flip(0), _hits([0, 1, 2, 3, 4, 7], 30), ids=IDS[::-1])
    backwards = _reversed_correctness(same, tmp_path / "backwards")
    a, b, r = map(_correctness, (first, same, backwards))
    assert b.series().index.tolist() == IDS and r.series().index.tolist() == IDS[::-1]
    with monkeypatch.context() as patched:
        patched.setattr(Correctness, "sorted", lambda self: pytest.fail("an id was decoded"))
        assert [flags.tolist() for flags in a.aligned(b)] == [a_hits.tolist(), b_hits.tolist()]
    assert r.flags.tolist() == b_hits.flip(0).tolist()
    assert [flags.tolist() for flags in a.aligned(r)] == [a_hits.tolist(), b_hits.tolist()]
    ids = [f"ILSVRC2012_val_{i:08d}" for i in range(2, 62)]  # one image swapped for another
    other = write_bootstrapped_run(tmp_path, "timm:o", b_hits, _hits([0], 30), ids=ids)
    assert a.aligned(_correctness(other)) is None

    for below in (same, backwards):
        board = tmp_path / f"board-{below.name}"
        assert cli.main(["leaderboard", str(first), str(below), "--out", str(board)]) == 0
        tests = pd.read_csv(board / "leaderboard_significance.csv")
        row = tests[(tests["ranking"] == "accuracy: imagenet_val") & (tests["rank"] == 1)].iloc[0]
        assert row["note"] == "8 images right only for the first, 4 only for the second"
        assert row["p_value"] == pytest.approx(stats.binomtest(4, 12, 0.5).pvalue)


def test_a_run_without_intervals_is_listed_and_left_out_of_the_tests(tmp_path, capsys):
    first = write_bootstrapped_run(tmp_path, "timm:a", _hits([1, 2]), _hits([1], 30))
    plain = tmp_path / "plain"
    plain.mkdir()
    suite = suite_json("timm:z", 0.5, imagenet_multilabel=_expert_report(0.5))
    suite["summary"] = {**suite_summary(suite["datasets"], params_millions=0.001), "uncertainty": None}
    (plain / "suite.json").write_text(json.dumps(suite))
    older = tmp_path / "older"
    older.mkdir()
    (older / "suite.json").write_text(json.dumps(suite_json("timm:y", 0.4, imagenet_multilabel=_expert_report(0.4))))
    assert cli.main(leaderboard(tmp_path, first, plain, older)) == 0
    text = (tmp_path / "board" / "leaderboard.md").read_text()
    assert "- `timm:z`: no intervals, evaluated without intervals (evaluate --bootstrap 0)" in text
    assert "- `timm:y`: no intervals, its suite.json was written before intervals: evaluate it again" in text
    tests = pd.read_csv(tmp_path / "board" / "leaderboard_significance.csv")
    row = tests[(tests["model"] == "timm:a") & (tests["ranking"] == "accuracy: imagenet_val")].iloc[0]
    assert pd.isna(row["p_value"]) and row["note"].startswith("no test: 'timm:z' has no intervals")
