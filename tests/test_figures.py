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
from imagenet_suite.scoring.presentation.html import render
from imagenet_suite.scoring.presentation.html_leaderboard import leaderboard_page, write_leaderboard_html
from imagenet_suite.scoring.presentation.shading import Shading, cell_style
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
    # Borda: the ranked models only (timm:D's L1 attack is not the paper's), the MAC in the title
    borda = drawn[heuillet2025.BORDA]
    assert set(board.heuillet2025.scores["borda"].dropna().index) == {"timm:A", "timm:B", "timm:C"}
    assert all(f">{m}<" in borda for m in ("timm:A", "timm:B", "timm:C")) and ">timm:D<" not in borda
    assert f"MAC = {board.heuillet2025.mac:.3f}" in borda
    # ΔRank: each point named with the ΔRank the leaderboard computed (not all 0 here)
    assert set(board.delta_rank) != {0}
    for model, delta in board.delta_rank.items():
        assert f">{model} ({int(delta):+d})<" in drawn[anzaku2024.DELTA_RANK]
    # shape bias: the categories of the reports, each model's pooled value; timm:D only its QUBA dimension
    shape = drawn[geirhos2019.SHAPE_BIAS]
    assert all(f">{category}<" in shape for category in SHAPE_BIAS)
    assert ">timm:A pooled 0.300<" in shape and ">timm:C pooled 0.550<" in shape
    assert f">timm:D (pooled only) {board.quba.loc['timm:D', 'shape_bias']:.3f}<" in shape
    humans, _ = geirhos2019.human_shape_bias()  # the ten observers, pooled (tests/test_human_shape_bias.py)
    assert f">humans pooled {humans:.3f}<" in shape and f">{geirhos2019.HUMANS}<" in shape


def shaded_table(page: str, name: str) -> tuple[list[str], list[list[tuple[str, str, str]]], dict | None]:
    """``(columns, rows of (shown, sort key, style attribute or ""), data-shade or None)`` of the table captioned
    ``name`` in a page's HTML (its first :data:`~imagenet_suite.scoring.presentation.html.SHOWN_ROWS` rows)."""
    found = re.search(rf"<h3>{re.escape(html.escape(name))}</h3>.*?</table>", page, re.S)
    assert found is not None, f"no table {name!r}"
    block = found[0]
    shade = re.search(r'<table class="sortable"(?: data-shade="([^"]*)")?>', block)[1]
    heads = re.findall(r"<th [^>]*>(.*?)</th>", block)
    columns = [html.unescape(re.sub(r"<span.*?</span>", "", h)).strip().removesuffix(" (%)") for h in heads]
    cell = r'<td data-sort="([^"]*)" class="\w+"(?: title="[^"]*")?( style="[^"]*")?>([^<]*)</td>'
    rows = [
        [(html.unescape(shown), html.unescape(key), style) for key, style, shown in re.findall(cell, tr)]
        for tr in re.findall(r"<tr>(<td.*?)</tr>", block)
    ]
    return columns, rows, None if shade is None else json.loads(html.unescape(shade))


def test_nincos_fpr95_tables_are_shaded_and_msps_fpr95_per_class_is_a_table(board_and_suites):
    board, suites, root = board_and_suites
    page = write_leaderboard_html(board, suites, root / "shaded").read_text()
    # Table 3: every detector's cell shaded by its value (0 white to 1 dark red), ImageNet top-1 plain
    columns, rows, shade = shaded_table(page, "Mean FPR@95 on NINCO (Table 3)")
    detectors = list(board.ninco.fpr95.columns)
    assert shade["c"] == [columns.index(d) for d in detectors] and (shade["lo"], shade["hi"]) == (0, 1)
    for row_cells in rows:
        for column, (_, key, style) in zip(columns, row_cells, strict=True):
            expected = cell_style(key, Shading(detectors)) if column in detectors else ""
            assert style == expected and (style != "") == (column in detectors and key != "")
    model = {r[0][0]: r for r in rows}["timm:B"]
    assert [float(model[columns.index(d)][1]) for d in detectors] == board.ninco.fpr95.loc["timm:B"].tolist()
    # MSP's FPR@95 per OOD class: classes by name × the four runs, in percent, shaded
    columns, rows, shade = shaded_table(page, f"{bitterwolf2023.PER_CLASS} (msp)")
    assert columns == ["OOD class", *suites] and [r[0][0] for r in rows] == sorted(NINCO_CLASSES)
    for row_cells in rows:
        assert [shown for shown, _, _ in row_cells[1:]] == [
            f"{100 * (NINCO_CLASSES[row_cells[0][0]] + i / 10):.1f}" for i in range(len(suites))
        ]
        assert all(style == cell_style(key, Shading(columns[1:])) != "" for _, key, style in row_cells[1:])
    assert "the 4 runs with per-class rows of msp" in page
    assert "FPR@95 per NINCO OOD class and model (msp)" not in _figures(page)  # a table, not a figure


def test_a_runs_fpr95_per_ninco_class_and_detector_one_shaded_table_worst_class_on_top():
    from imagenet_suite.scoring.presentation.html import render
    from imagenet_suite.scoring.presentation.html_run import run_page

    suite = with_reports(suite_json("timm:m", 0.5), **ninco_reports(0.2))
    assert bitterwolf2023.per_class_detectors(suite).empty
    page = render(run_page(suite))
    assert f"Not shown: FPR@95 per OOD class: {html.escape(bitterwolf2023.NO_PER_CLASS_ROWS)}." in page
    per_class = {"msp": {"class_a": 0.25, "class_b": 0.75, "class_c": 0.125}, "vim": {"class_a": 0.625, "class_b": 0.0}}
    suite["datasets"]["ninco/ninco"]["metrics"] += [
        row("fpr95", value, detector, name)
        for detector, values in per_class.items()
        for name, value in (*values.items(), ("ninco_sample", 0.5))  # a cleaned subset's column: not a class
    ]
    assert bitterwolf2023.per_class_fpr95(suite) == per_class
    page = render(run_page(suite))
    columns, rows, shade = shaded_table(page, bitterwolf2023.RUN_PER_CLASS)
    # means over the detectors: class_a 0.4375, class_b 0.375, class_c 0.125 (vim has none): worst on top;
    # the detectors in the run's order
    assert columns == ["OOD class", "msp", "vim"] and shade["c"] == [1, 2]
    assert [[shown for shown, _, _ in r] for r in rows] == [
        ["class_a", "25.0", "62.5"],
        ["class_b", "75.0", "0.0"],
        ["class_c", "12.5", "—"],  # vim's class_c: not scored, not shaded
    ]
    styles = [[style for _, _, style in r[1:]] for r in rows]
    assert styles[2][1] == "" and all(style for r in styles[:2] for style in r) and styles[2][0]
    white, darkest = cell_style("0", Shading(["x"])), cell_style("1", Shading(["x"]))
    assert rows[1][2][2] == white and "color:#000" in white and "color:#fff" in darkest
    assert "ninco_sample" not in page


def test_the_radar_and_the_per_class_table_show_at_most_the_best_models(board_and_suites, monkeypatch):
    board, suites, _ = board_and_suites
    found = bitterwolf2023.per_class_runs(suites)
    monkeypatch.setattr(bitterwolf2023, "MOST_COLUMNS", 2)
    detector, frame = bitterwolf2023.per_class_models(found)
    means = {model: sum(per["msp"].values()) / len(per["msp"]) for model, per in found.items()}
    assert detector == "msp" and list(frame.columns) == sorted(means, key=means.get)[:2]  # the lowest first
    assert bitterwolf2023.per_class_models(found, "absent")[0] == "msp"  # the first run's first detector
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
    assert "`ninco` config" in bitterwolf2023.per_class_cdf(load_suites(runs)).missing
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
    page = render(leaderboard_page(leaderboard(suites), suites))
    columns, rows, shade = shaded_table(page, hendrycks2019.CE)
    assert columns == ["corruption", "timm:m0 (mCE 1)", "timm:m1 (mCE 1)"]
    assert [[shown for shown, _, _ in r] for r in rows] == [
        ["gaussian_noise", "0.75", "0.875"],
        ["snow", "1.25", "1.125"],
    ]
    # green below AlexNet (1), red above, over 0.5 to 1.5 (the values are within 0.25 of 1)
    shading = hendrycks2019.ce_shading(frame)
    assert (shade["lo"], shade["hi"], shade["c"]) == (0.5, 1.5, [1, 2]) and shading.cmap == "RdYlGn_r"
    assert all(style == cell_style(key, shading) != "" for r in rows for _, key, style in r[1:])
    assert "Not shown" not in page
    suites["timm:m1"]["summary"]["imagenet_c"]["corruptions"]["snow"]["ce"] = 3.0  # widens the range to -1 to 3
    assert (hendrycks2019.ce_shading(hendrycks2019.ce_frame(suites)).vmin, hendrycks2019.ce_shading(
        hendrycks2019.ce_frame(suites)).vmax) == (-1.0, 3.0)  # fmt: skip
    del suites["timm:m0"]["summary"]["imagenet_c"], suites["timm:m1"]["summary"]["imagenet_c"]
    assert "ImageNet-C" not in [s.title for s in leaderboard_page(leaderboard(suites), suites).sections]
    assert hendrycks2019.ce_frame(suites).empty and "imagenet_c builds" in hendrycks2019.NO_CE


def test_a_heatmaps_cells_are_one_pixel_each_in_the_svg_and_its_png_is_matplotlibs_default(monkeypatch):
    """A heatmap's cells (``plots.CELLS``; the Spearman matrix's): the SVG holds the rows × columns image, unresampled
    and drawn pixelated, not an image of the figure's size; the PNG (Agg) is the same bytes as with matplotlib's
    default."""
    import base64
    import io

    import numpy as np
    import pandas as pd
    from matplotlib.axes import Axes
    from PIL import Image

    from imagenet_suite.scoring.presentation.html import figure_svg
    from imagenet_suite.scoring.presentation.plots import correlation_heatmap

    frame = pd.DataFrame(np.linspace(-1, 1, 12).reshape(4, 3) @ np.ones((3, 4)) / 3, index=list("wxyz"),
                         columns=list("wxyz"))  # fmt: skip
    frame.iloc[2, 1] = np.nan

    def heatmap(frame):
        return correlation_heatmap(frame, frame.abs())

    svg = figure_svg(heatmap(frame), "cells")
    cells = re.search(r'<image [^>]*style="image-rendering:crisp-edges;image-rendering:pixelated"', svg, re.S)
    encoded = re.search(r"data:image/png;base64,\s*([A-Za-z0-9+/=\s]+)", cells[0] if cells else "")
    assert encoded is not None, "no pixelated cell image in the SVG"
    assert Image.open(io.BytesIO(base64.b64decode(encoded[1]))).size == (4, 4)

    def png(figure) -> bytes:
        buffer = io.BytesIO()
        figure.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()

    drawn = png(heatmap(frame))
    imshow = Axes.imshow  # the default interpolation instead of CELLS'
    monkeypatch.setattr(Axes, "imshow", lambda self, *a, interpolation=None, **k: imshow(self, *a, **k))
    assert png(heatmap(frame)) == drawn
