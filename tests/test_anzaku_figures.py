"""Anzaku et al. 2024, Figs. 4–7 (issue 37), drawn from hand-written runs' ``anzaku2024`` reports and from the
published Tables 4–10 (the reference zoo): each figure written, its labels read back from the SVG; without their
data each says what is missing and the command that adds it.

The ImageNetV1 label counts are Table 1's (39,394 / 5,408 / 1,319 / 411 / 161 images with 1–5 ReaL labels, 144 with
more; 46,837 labelled), as the ``multilabel_real`` family reports them: ``subgroup_accuracy`` rows with ``N_g`` as
denominator, ``asma_coverage`` = 46,693 / 46,837.
"""

from __future__ import annotations

import html
import re

import pytest
import torch

from imagenet_suite.scoring.metrics.multilabel import multilabel_scores
from imagenet_suite.scoring.presentation.figures import anzaku2024 as figures
from imagenet_suite.scoring.presentation.html import Figure
from imagenet_suite.scoring.presentation.html_leaderboard import _anzaku_section
from imagenet_suite.scoring.summary.leaderboard import leaderboard, load_suites
from tests.test_leaderboard_papers import SHA_N, report, row, with_reports
from tests.test_read_runs import suite_json, write_run

TABLE1_V1 = {1: 39394, 2: 5408, 3: 1319, 4: 411, 5: 161}  # Anzaku et al. 2024, Table 1, ImageNetV1
PATCHML_COUNTS = (2, 3, 4, 6, 9)  # Table 2's label counts
PROTOCOL = {"preprocessing": {"protocol": "anzaku2024"}}


def _run(root, i: int):
    """Run ``i``: top-1 0.7 + i/20 on ImageNet val (ReaL labels), subgroup accuracy 0.8 − g/10 + i/100 and ReaL
    accuracy 0.9 − g/20 per label count g, and two PatchML seeds with subgroup accuracy 0.6 − g/20 + i/50 (+ 0.01 for seed 1), ASMA 0.3 + i/10."""
    rows = [row("top1_accuracy", 0.7 + i / 20), row("multilabel_real_accuracy", 0.8, "all"), row("asma", 0.5, "exact")]
    rows += [
        row("subgroup_accuracy", 0.8 - g / 10 + i / 100, "exact", f"labels={g}", denominator=n)
        for g, n in TABLE1_V1.items()
    ]
    rows += [
        row("multilabel_real_accuracy", 0.9 - g / 20, "subgroups", f"labels={g}", denominator=n)
        for g, n in TABLE1_V1.items()
    ]
    rows.append(row("asma_coverage", 46693 / 46837, numerator=46693, denominator=46837))
    reports = {"imagenet_real@anzaku2024": report("imagenet_real", "labels", rows, SHA_N, **PROTOCOL)}
    for seed in (0, 1):
        patch = [row("asma", 0.3 + i / 10, "exact")]
        patch += [
            row("subgroup_accuracy", 0.6 - g / 20 + i / 50 + seed / 100, "exact", f"labels={g}", denominator=10)
            for g in PATCHML_COUNTS
        ]
        reports[f"patchml-s{seed}"] = report("patchml", f"s{seed}", patch, f"{seed + 1:x}" * 64, protocol={"seed": seed},
                                             **PROTOCOL)  # fmt: skip
    return write_run(root, f"m{i}", with_reports(suite_json(f"timm:m{i}", 0.7), **reports))


def _texts(svg: str) -> set[str]:
    return {html.unescape(text) for text in re.findall(r">([^<>]+)<", svg)}


@pytest.fixture(scope="module")
def board_and_suites(tmp_path_factory):
    root = tmp_path_factory.mktemp("anzaku")
    suites = load_suites([_run(root, i) for i in range(3)])
    return leaderboard(suites), suites


def test_the_report_has_real_accuracy_per_label_count():
    """Fig. 6a's numbers: row 0 (labels {0, 2}) predicts class 1 first, rows 1 ({3}) and 2 ({0, 1, 2}) a class of
    their set: ReaL accuracy 1/1 with one label, 0/1 with two, 1/1 with three; over all, 2/3."""
    scores = torch.tensor([[0.3, 0.5, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]])
    rows = multilabel_scores(scores, torch.tensor([[0, 2, -1], [3, -1, -1], [0, 1, 2]]), groups=(1, 2, 3)).rows()
    real = {
        (r.variant, r.subgroup): (r.numerator, r.denominator) for r in rows if r.metric == "multilabel_real_accuracy"
    }
    assert real == {
        ("all", ""): (2, 3),
        ("subgroups", ""): (2, 3),
        ("subgroups", "labels=1"): (1, 1),
        ("subgroups", "labels=2"): (0, 1),
        ("subgroups", "labels=3"): (1, 1),
    }


def test_fig_4_label_counts_and_fig_6_per_label_count(board_and_suites):
    _, suites = board_and_suites
    sets = figures.multilabel_sets(suites["timm:m1"])
    assert list(sets) == ["ImageNet val (ReaL labels)"]
    per = sets["ImageNet val (ReaL labels)"]
    assert {g: e["images"] for g, e in per.items()} == {**{str(g): n for g, n in TABLE1_V1.items()}, ">5": 144}
    assert (per["2"]["accuracy"], per["2"]["real"]) == pytest.approx((0.61, 0.8))
    pies = _texts(figures.label_count_pies(suites).svg)
    # 39,394 / 46,837 = 84.1 %, 144 / 46,837 = 0.3 % (the paper: "around 16 %" of ImageNetV1 has several labels)
    assert {
        "1 label: 39,394 (84.1 %)",
        ">5 labels: 144 (0.3 %)",
        "ImageNet val (ReaL labels): 46,837 labelled images",
    } <= pies
    boxes = figures.subgroup_boxes(suites)
    assert {"(a) ReaL accuracy per label count", "(b) subgroup accuracy per label count, 3 run(s)"} <= _texts(boxes.svg)
    assert {"1", "2", "3", "4", "5"} <= _texts(boxes.svg)


def test_fig_5_from_the_runs_and_from_the_published_models(board_and_suites):
    board, _ = board_and_suites
    runs = _texts(figures.accuracy_lines(board).svg)
    assert {"timm:m0", "timm:m1", "timm:m2", "(a) top-1 accuracy", "(b) ReaL accuracy", "(c) ASMA"} <= runs
    assert "Anzaku et al. 2024, Fig. 5: the runs (ImageNetV1 only: no run has a second multi-label set)" in runs
    published = _texts(figures.published_accuracy_lines().svg)
    assert {"Anzaku et al. 2024, Fig. 5: the 315 published models (Tables 4–10)", "absolute difference"} <= published
    assert {"ImageNetV1", "ImageNetV2"} <= published


def test_fig_7_patchml_boxes_with_the_top_models(board_and_suites):
    _, suites = board_and_suites
    assert figures.patchml_subgroups(suites["timm:m2"])[1]["9"] == pytest.approx(0.6 - 0.45 + 0.04 + 0.01)
    texts = _texts(figures.patchml_boxes(suites).svg)
    assert {"top 5 by ImageNetV1 top-1", "top 5 by PatchML ASMA", "2", "3", "4", "6", "9"} <= texts
    assert "Anzaku et al. 2024, Fig. 7: PatchML, 3 run(s) × their seeds" in texts


def test_leaderboard_html_draws_delta_rank_then_figs_4_to_7(board_and_suites, monkeypatch):
    board, suites = board_and_suites
    monkeypatch.setattr(figures, "drawn", lambda name, draw, *args, **kwargs: Figure(name, svg="<svg/>"))
    monkeypatch.setattr(figures, "published_accuracy_lines", lambda: Figure(figures.PUBLISHED, svg="<svg/>"))
    section = _anzaku_section(board, suites)  # each figure's drawing is tested above; here which and in what order
    assert [(f.name, f.svg) for f in section.figures] == [
        (name, "<svg/>")
        for name in (
            figures.DELTA_RANK,
            figures.PIES,
            figures.ACCURACIES,
            figures.PUBLISHED,
            figures.SUBGROUPS,
            figures.PATCHML_BOXES,
        )
    ]


def test_without_their_data_the_figures_say_what_is_missing(tmp_path):
    suites = load_suites([write_run(tmp_path, f"m{i}", suite_json(f"timm:m{i}", 0.5)) for i in range(2)])
    board = leaderboard(suites)
    missing = {f.name: f.missing for f in [figures.delta_rank_scatter(board), *figures.figures(board, suites)]}
    assert missing.pop(figures.PUBLISHED) == ""  # the published models need no run
    for name, text in missing.items():
        assert "imagenet-suite leaderboard" in text, name
    assert "`imagenet_real`" in missing[figures.PIES] and "`patchml`" in missing[figures.PATCHML_BOXES]
