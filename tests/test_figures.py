"""The per-paper figures of leaderboard.html (issue 39 item 3; ``scoring/presentation/figures/``).

Four hand-written runs (the suite.json fixtures of ``test_leaderboard_heuillet`` — the paper's five
perturbation types, one run's L1 attack not the paper's — with QUBA dimensions, NINCO reports and
ImageNet-ReaL / PatchML and cue-conflict reports of ``test_leaderboard_papers`` added): each paper's figure is drawn as
inline SVG into leaderboard.html, from the leaderboard's own numbers (the radar's polygons, the heatmap's
cells, the Borda bars and the ΔRank points are read back from the SVG text). Two runs without those data:
every figure is replaced by what is missing and the command that adds it. LCA-on-the-Line's lines of three
runs; a run's NINCO per-class bars.
"""

from __future__ import annotations

import html
import json
import re

import pytest

from imagenet_suite.scoring.metrics.quba import DIMENSIONS
from imagenet_suite.scoring.presentation.figures import (
    anzaku2024,
    bitterwolf2023,
    geirhos2019,
    hendrycks2019,
    hesse2025,
    heuillet2025,
    shi2024,
)
from imagenet_suite.scoring.presentation.html_leaderboard import leaderboard_page, write_leaderboard_html
from imagenet_suite.scoring.summary.leaderboard import leaderboard, load_suites
from tests.test_leaderboard_heuillet import paper_runs
from tests.test_leaderboard_papers import (
    anzaku_reports,
    lca_suite,
    ninco_reports,
    random_dims,
    report,
    row,
    with_dimensions,
    with_reports,
)
from tests.test_read_runs import suite_json, write_run

FIGURES = (
    (hesse2025.radar, hesse2025.RADAR),
    (bitterwolf2023.fpr95_heatmap, bitterwolf2023.HEATMAP),
    (heuillet2025.borda_bars, heuillet2025.BORDA),
    (anzaku2024.delta_rank_scatter, anzaku2024.DELTA_RANK),
)
NINCO_CLASSES = {"class_a": 0.25, "class_b": 0.5}  # MSP's FPR@95 per OOD class of the first run (+ 0.1 a run)
SHAPE_BIAS = {"cat": 0.25, "dog": 0.5, "clock": 0.125}  # per shape category of the cue-conflict report


def shape_report(shift: float) -> dict:
    """A ``shape_bias_sets`` / ``cue_conflict`` report as the ``shape_bias`` family writes it: pooled, then per
    shape category."""
    rows = [row("shape_bias", 0.3 + shift, "pooled")]
    rows += [row("shape_bias", value + shift, "pooled", category) for category, value in SHAPE_BIAS.items()]
    return report("shape_bias_sets", "cue_conflict", rows, "a" * 64)


PATCHML = (0.3, 0.6, 0.4, 0.5)  # PatchML ASMA by run: orders the runs unlike their top-1 (ΔRank ≠ 0)


@pytest.fixture(scope="module")
def board_and_suites(tmp_path_factory):
    root = tmp_path_factory.mktemp("figures")
    runs = paper_runs(root)
    dims = list(random_dims(len(runs)).values())
    for i, run in enumerate(runs):
        suite = json.loads((run / "suite.json").read_text())
        adversarial = suite["summary"]["adversarial"]  # with_reports recomputes the summary from the reports
        shape = {"shape_bias_sets/cue_conflict": shape_report(i / 8)} if i < 3 else {}  # the fourth: pooled only
        suite = with_reports(suite, **ninco_reports(0.1 * i), **anzaku_reports(0.7 + 0.05 * i, 0.8, 0.5,
                                                                              (PATCHML[i],), False), **shape)  # fmt: skip
        suite["summary"]["adversarial"] = adversarial
        suite["datasets"]["ninco/ninco"]["metrics"] += [
            row("fpr95", value + i / 10, "msp", name) for name, value in NINCO_CLASSES.items()
        ]  # FPR@95 per OOD class, as the ood family reports it
        (run / "suite.json").write_text(json.dumps(with_dimensions(suite, dict(zip(DIMENSIONS, dims[i], strict=True)))))
    suites = load_suites(runs)
    return leaderboard(suites), suites, root


def _figures(page: str) -> dict[str, str]:
    """``{caption: inline SVG}`` of every drawn figure of a page."""
    found = re.findall(r'<figure class="plot"><figcaption>(.*?)</figcaption>(<svg.*?</svg>)', page, re.S)
    return {html.unescape(caption): svg for caption, svg in found}


def test_each_papers_figure_is_drawn_into_leaderboard_html(board_and_suites):
    board, suites, root = board_and_suites
    drawn = _figures(write_leaderboard_html(board, suites, root / "board").read_text())
    assert {name for _, name in FIGURES} | {geirhos2019.SHAPE_BIAS} <= set(drawn)

    # the radar: one polygon per model with all nine dimensions, named in the legend
    assert all(f">{model}<" in drawn[hesse2025.RADAR] for model in board.quba.index)
    # the heatmap's cells: the mean FPR@95 of every model and detector, in percent
    cells = set(re.findall(r">(\d+\.\d)<", drawn[bitterwolf2023.HEATMAP]))
    assert {f"{100 * v:.1f}" for v in board.ninco.fpr95.to_numpy().ravel()} <= cells
    # Borda: the ranked models only (timm:D's L1 attack is not the paper's), the MAC in the title
    borda = drawn[heuillet2025.BORDA]
    assert set(board.heuillet2025.scores["borda"].dropna().index) == {"timm:A", "timm:B", "timm:C"}
    assert all(f">{m}<" in borda for m in ("timm:A", "timm:B", "timm:C")) and ">timm:D<" not in borda
    assert f"MAC = {board.heuillet2025.mac:.3f}" in borda
    # ΔRank: each point named with the ΔRank the leaderboard computed (not all 0 here)
    assert set(board.delta_rank) != {0}
    for model, delta in board.delta_rank.items():
        assert f">{model} ({int(delta):+d})<" in drawn[anzaku2024.DELTA_RANK]
    # FPR@95 per OOD class and model: MSP's
    per_class = drawn[f"{bitterwolf2023.PER_CLASS} (msp)"]
    assert {f">{100 * (v + i / 10):.1f}<" for v in NINCO_CLASSES.values() for i in range(4)} <= set(
        re.findall(r">[\d.]+<", per_class)
    )
    assert all(f">{name}<" in per_class for name in NINCO_CLASSES)
    # shape bias: the categories of the reports, each model's pooled value; timm:D only its QUBA dimension
    shape = drawn[geirhos2019.SHAPE_BIAS]
    assert all(f">{category}<" in shape for category in SHAPE_BIAS)
    assert ">timm:A pooled 0.300<" in shape and ">timm:C pooled 0.550<" in shape
    assert f">timm:D (pooled only) {board.quba.loc['timm:D', 'shape_bias']:.3f}<" in shape
    humans, _ = geirhos2019.human_shape_bias()  # the ten observers, pooled (tests/test_human_shape_bias.py)
    assert f">humans pooled {humans:.3f}<" in shape and f">{geirhos2019.HUMANS}<" in shape


def test_a_runs_fpr95_per_ninco_class_and_detector_one_figure_worst_class_on_top():
    suite = with_reports(suite_json("timm:m", 0.5), **ninco_reports(0.2))
    missing = bitterwolf2023.per_class_detectors(suite).missing
    assert missing.startswith("the run's NINCO report has no per-class rows: evaluate again with the `ninco` config")
    per_class = {"msp": {"class_a": 0.25, "class_b": 0.75, "class_c": 0.125}, "vim": {"class_a": 0.625, "class_b": 0.0}}
    suite["datasets"]["ninco/ninco"]["metrics"] += [
        row("fpr95", value, detector, name)
        for detector, values in per_class.items()
        for name, value in (*values.items(), ("ninco_sample", 0.5))  # a cleaned subset's column: not a class
    ]
    assert bitterwolf2023.per_class_fpr95(suite) == per_class
    figure = bitterwolf2023.per_class_detectors(suite)
    assert figure.name == bitterwolf2023.RUN_PER_CLASS and not figure.missing
    svg = figure.svg
    # means over the detectors: class_a 0.4375, class_b 0.375, class_c 0.125 (vim has none): worst on top
    assert svg.index(">class_a<") < svg.index(">class_b<") < svg.index(">class_c<")
    assert svg.index(">msp<") < svg.index(">vim<")  # the detectors in the run's order
    cells = re.findall(r">([\d.]+|—)<", svg)
    assert [cells.count(f"{100 * v:.1f}") for v in (0.25, 0.75, 0.125, 0.625, 0.0)] == [1, 1, 1, 1, 1]
    assert "—" in cells  # vim's class_c: not scored
    assert "ninco_sample" not in svg


def test_the_radar_and_the_ninco_heatmap_draw_at_most_the_best_models(board_and_suites, monkeypatch):
    board, _, _ = board_and_suites
    monkeypatch.setattr(bitterwolf2023, "MOST_ROWS", 2)
    heatmap = bitterwolf2023.fpr95_heatmap(board).svg
    best = board.ninco.fpr95.mean(axis=1).sort_values().index  # lowest mean FPR@95 first
    assert all(f">{m}<" in heatmap for m in best[:2]) and not any(f">{m}<" in heatmap for m in best[2:])
    assert "the 2 best of 4 models" in heatmap
    monkeypatch.setattr(hesse2025, "MOST_MODELS", 2)
    radar = hesse2025.radar(board).svg
    best = board.quba["quba"].sort_values(ascending=False).index
    assert all(f">{model}<" in radar for model in best[:2]) and not any(f">{m}<" in radar for m in best[2:])
    assert "the 2 best by QUBA" in radar


def test_a_figure_without_its_data_says_what_is_missing_and_the_command(tmp_path):
    runs = [write_run(tmp_path, f"m{i}", suite_json(f"timm:m{i}", 0.5)) for i in range(2)]
    board = leaderboard(load_suites(runs))
    for function, name in FIGURES:
        figure = function(board)
        assert figure.svg is None and figure.name == name
        assert "imagenet-suite" in figure.missing and "leaderboard" in figure.missing, figure.missing
    assert "all nine QUBA dimensions" in hesse2025.radar(board).missing
    assert "autoattack-linf" in heuillet2025.borda_bars(board).missing
    assert "anzaku2024" in anzaku2024.delta_rank_scatter(board).missing
    assert "`ninco` config" in bitterwolf2023.fpr95_heatmap(board).missing
    shape = geirhos2019.shape_bias(load_suites(runs))
    assert (
        shape.svg is None and "`cue_conflict` config" in shape.missing and "imagenet-suite leaderboard" in shape.missing
    )


def test_lca_on_the_line_an_lca_line_and_a_top1_baseline_per_ood_set(tmp_path):
    ood = {"m:a": (0.80, 5.0, 0.40), "m:b": (0.70, 6.0, 0.35), "m:c": (0.75, 5.5, 0.30)}
    runs = [
        write_run(tmp_path, name.replace(":", "_"), lca_suite(name, top1, lca, {"imagenet_r": (r, None)}))
        for name, (top1, lca, r) in ood.items()
    ]
    board = leaderboard(load_suites(runs))
    figures = shi2024.lines(board)
    assert [f.name for f in figures] == ["imagenet_r: ImageNet LCA vs OOD top-1", "imagenet_r: ImageNet top-1 baseline"]
    assert all(f.svg is not None and f.svg.startswith("<svg") for f in figures)
    assert "fit: R²=" in figures[0].svg
    few = shi2024.lines(leaderboard(load_suites(runs[:2])))
    assert [f.svg for f in few] == [None] and "at least three runs" in few[0].missing


def test_imagenet_c_ce_per_corruption_and_model():
    suites = {f"timm:m{i}": suite_json(f"timm:m{i}", 0.5) for i in range(3)}
    for i, model in enumerate(("timm:m0", "timm:m1")):
        ce = {"gaussian_noise": 0.75 + i / 8, "snow": 1.25 - i / 8}
        suites[model]["summary"]["imagenet_c"] = {
            "mce": sum(ce.values()) / 2,
            "sets": 10,
            "corruptions": {name: {"accuracy": 0.5, "ce": value, "relative_ce": None} for name, value in ce.items()},
        }
    frame = hendrycks2019.ce_frame(suites)
    assert list(frame.columns) == ["timm:m0 (mCE 1)", "timm:m1 (mCE 1)"]  # timm:m2 has no ImageNet-C
    assert frame.loc["snow"].tolist() == [1.25, 1.125]
    page = leaderboard_page(leaderboard(suites), suites)
    section = next(s for s in page.sections if s.title == "ImageNet-C")
    svg = section.figures[0].svg
    assert all(f">{v:.3f}<" in svg for v in (0.75, 0.875, 1.25, 1.125)) and ">timm:m0 (mCE 1)<" in svg
    del suites["timm:m0"]["summary"]["imagenet_c"], suites["timm:m1"]["summary"]["imagenet_c"]
    assert "ImageNet-C" not in [s.title for s in leaderboard_page(leaderboard(suites), suites).sections]
    assert "imagenet_c builds" in hendrycks2019.ce_heatmap(suites).missing


def test_a_heatmaps_cells_are_one_pixel_each_in_the_svg_and_its_png_is_matplotlibs_default(monkeypatch):
    """The NINCO heatmap's cells (``plots.CELLS``): the SVG holds the rows × columns image, unresampled and drawn
    pixelated, not an image of the figure's size; the PNG (Agg) is the same bytes as with matplotlib's default."""
    import base64
    import io

    import numpy as np
    import pandas as pd
    from matplotlib.axes import Axes
    from PIL import Image

    from imagenet_suite.scoring.presentation.html import figure_svg

    frame = pd.DataFrame(np.linspace(0, 1, 12).reshape(3, 4), index=["a", "b", "c"], columns=list("wxyz"))
    frame.iloc[1, 2] = np.nan
    svg = figure_svg(bitterwolf2023.heatmap_plot(frame), "cells")
    cells = re.search(r'<image [^>]*style="image-rendering:crisp-edges;image-rendering:pixelated"', svg, re.S)
    encoded = re.search(r"data:image/png;base64,\s*([A-Za-z0-9+/=\s]+)", cells[0] if cells else "")
    assert encoded is not None, "no pixelated cell image in the SVG"
    assert Image.open(io.BytesIO(base64.b64decode(encoded[1]))).size == (4, 3)

    def png(figure) -> bytes:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()

    drawn = png(bitterwolf2023.heatmap_plot(frame))
    imshow = Axes.imshow  # the default interpolation instead of CELLS'
    monkeypatch.setattr(Axes, "imshow", lambda self, *a, interpolation=None, **k: imshow(self, *a, **k))
    assert png(bitterwolf2023.heatmap_plot(frame)) == drawn
