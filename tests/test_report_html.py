"""``report.html`` and ``leaderboard.html`` (issue 39 item 3): self-contained pages opened in headless Chromium.

Three hand-written run folders (the suite.json fixtures of ``test_read_runs`` and ``test_leaderboard_papers``:
QUBA dimensions for all, NINCO reports for two) go through ``leaderboard`` (which writes leaderboard.html) and
``report`` (report.html of one run, then leaderboard.html again from the leaderboard folder), in this
process. Chromium opens each page with the network off (no DNS, CDP offline): every section and figure is
there, a figure without data is replaced by what is missing and the command that adds it, the page fetched
nothing, logged no console error, and clicking a column header sorts the rows. Screenshots go to
``test-artifacts/`` (the docs show copies in ``docs/images/``).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from imagenet_suite import cli
from imagenet_suite.scoring.metrics.calibration import calibration_bins
from imagenet_suite.scoring.metrics.quba import DIMENSIONS, quba_score
from imagenet_suite.scoring.presentation.figures.bitterwolf2023 import RUN_PER_CLASS
from tests.helpers import REPO_ROOT
from tests.test_leaderboard_papers import dims_runs, ninco_reports, random_dims, row, with_reports
from tests.test_read_runs import suite_json, write_run
from tests.test_review_app import CHROMEDRIVER, CHROMIUM

ARTIFACTS = REPO_ROOT / "test-artifacts"
BROWSER = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs Debian chromium + chromium-driver (installed by .ci/run)",
)


def _runs(tmp_path: Path) -> list[Path]:
    runs = dims_runs(tmp_path, random_dims(3))
    for i, run in enumerate(runs):
        suite = json.loads((run / "suite.json").read_text())
        quba = suite["summary"]["quba"]
        if i < 2:
            suite = with_reports(suite, **ninco_reports(0.2 * i))
            suite["datasets"]["ninco/ninco"]["metrics"] += [  # FPR@95 per OOD class, as the ood family reports it
                row("fpr95", value, detector, f"class_{k}")
                for detector in ("msp", "vim")
                for k, value in enumerate((0.3, 0.05, 0.6))
            ]
        if i == 0:  # the calibration family's bins of 200 seeded confidences: report.html's reliability diagram
            rng = np.random.default_rng(0)
            confidence = torch.from_numpy(rng.uniform(0.2, 1.0, 200))
            bins = calibration_bins(confidence, torch.from_numpy(rng.uniform(size=200)) < confidence)
            suite["datasets"]["imagenet_val"]["reliability"] = {bins.convention: bins.to_json()}
        values = np.array([quba["dimensions"][name]["value"] for name in DIMENSIONS])
        suite["summary"]["quba"] = {**quba, "missing": {}, "score": float(quba_score(values))}  # the random ones
        (run / "suite.json").write_text(json.dumps(suite))
    return runs


def _browser(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # no name resolves: nothing can be fetched
        "--window-size=1300,1800",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd(
        "Network.emulateNetworkConditions",
        {"offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0},
    )
    return driver


def _check_page(driver, page: Path, sections: list[str], screenshot: str) -> dict[str, int]:
    """Open ``page``; assert its sections, no fetch, no console error; return its figure counts."""
    from selenium.webdriver.common.by import By

    driver.get(page.as_uri())
    ids = [element.get_attribute("id") for element in driver.find_elements(By.CSS_SELECTOR, "main > section")]
    assert ids == sections
    resources = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources == []  # styles, script and figures are all inline
    errors = [entry for entry in driver.get_log("browser") if entry["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    figures = driver.find_elements(By.CSS_SELECTOR, "figure.plot svg")
    assert all(svg.size["width"] > 100 and svg.size["height"] > 100 for svg in figures)  # drawn, not empty
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / screenshot))
    return {
        "drawn": len(figures),
        "missing": len(driver.find_elements(By.CSS_SELECTOR, "figure.missing-figure")),
    }


def _sorted_by_header(driver, section: str, header: str) -> tuple[list[float], list[float]]:
    """Click ``header`` of the first table of ``section`` twice; the column's numbers after each click."""
    from selenium.webdriver.common.by import By

    table = driver.find_element(By.CSS_SELECTOR, f"#{section} table.sortable")
    headers = table.find_elements(By.CSS_SELECTOR, "thead th")
    column = next(i for i, th in enumerate(headers) if th.text.split(" ")[0] == header)
    found = []
    for _ in range(2):
        driver.execute_script("arguments[0].scrollIntoView()", headers[column])
        headers[column].click()
        keys = driver.execute_script(
            "return Array.from(arguments[0].tBodies[0].rows, r => r.cells[arguments[1]].dataset.sort)", table, column
        )
        found.append([float(key) for key in keys if key != ""])
    return found[0], found[1]


def _shaded_after_sorting(driver, section: str, caption: str) -> None:
    """Sort the table captioned ``caption`` by its first shaded column, both ways: every shaded cell the page's
    script draws has the style :func:`~imagenet_suite.scoring.presentation.shading.cell_style` writes for its sort
    key, and the browser paints that background."""
    from selenium.webdriver.common.by import By

    from imagenet_suite.scoring.presentation.shading import Shading, cell_style

    table = driver.find_element(By.XPATH, f'//section[@id="{section}"]//div[h3="{caption}"]//table')
    shade = json.loads(table.get_attribute("data-shade"))
    shading = Shading(["shaded"], vmin=shade["lo"], vmax=shade["hi"])
    header = table.find_elements(By.CSS_SELECTOR, "thead th")[shade["c"][0]]
    for click in range(3):  # as written, then ascending, then descending
        if click:
            driver.execute_script("arguments[0].scrollIntoView()", header)
            header.click()
        cells = driver.execute_script(
            "return Array.from(arguments[0].tBodies[0].rows, r => arguments[1].map(i => [r.cells[i].dataset.sort, "
            "r.cells[i].getAttribute('style') || '', getComputedStyle(r.cells[i]).backgroundColor])).flat()",
            table,
            shade["c"],
        )
        assert len(cells) >= 2 and any(style for _, style, _ in cells)
        for key, style, painted in cells:
            assert (f' style="{style}"' if style else "") == cell_style(key, shading), (key, style)
            if style:
                red, green, blue = (int(style[12 + 2 * k : 14 + 2 * k], 16) for k in range(3))  # background:#rrggbb
                assert painted == f"rgb({red}, {green}, {blue})"


@BROWSER
def test_report_and_leaderboard_pages_in_chromium_offline(tmp_path, capsys):
    runs = _runs(tmp_path)
    board = tmp_path / "board"
    assert cli.main(["leaderboard", *map(str, runs), "--out", str(board)]) == 0
    assert cli.main(["report", str(runs[0])]) == 0
    assert cli.main(["report", str(board)]) == 0  # from leaderboard_runs.json: the same page again
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [str(runs[0] / "report.html"), str(board / "leaderboard.html")]
    for page in (runs[0] / "report.html", board / "leaderboard.html"):
        text = page.read_text()
        assert 'src="http' not in text and 'href="http' not in text and "<link" not in text

    driver = _browser(Path(tempfile.mkdtemp(dir=tmp_path, prefix="chromium-")))
    try:
        counts = _check_page(
            driver,
            runs[0] / "report.html",
            ["headline-numbers", "quba", "accuracy-per-dataset", "ninco", "provenance"],
            "report.png",
        )
        # drawn: QUBA dimensions, the reliability diagram, accuracy per dataset (NINCO's classes × detectors: a table)
        assert counts == {"drawn": 3, "missing": 0}
        _shaded_after_sorting(driver, "ninco", RUN_PER_CLASS)
        ascending, descending = _sorted_by_header(driver, "headline-numbers", "value")
        assert ascending == sorted(ascending) and descending == sorted(ascending, reverse=True) and ascending

        counts = _check_page(
            driver,
            board / "leaderboard.html",
            [
                "headline-numbers",
                "beyond-accuracy-quba",
                "accuracy-per-dataset",
                "shape-bias",
                "robust-generalization-sum-borda-mac",
                "ninco",
                "lca-on-the-line",
                "top-1-real-asma-and-rank",
                "openood-v1-5-imagenet-1k",
                "are-the-rank-differences-real",
                "provenance",
            ],
            "leaderboard.png",
        )
        # drawn: the QUBA ranking, the radar, the Spearman matrix, the shape bias, NINCO's Figs. 4 and 5;
        # not drawn, with the command: LCA-on-the-Line (no OOD set), Heuillet et al.'s Borda (no AutoAttack, no common
        # corruptions), NINCO's Fig. 7 (no full popular OOD set) and Beyond Accuracy's Figs. 13 (no --groups; no
        # --reference hesse2025) and 14 (no AutoAttack)
        from selenium.webdriver.common.by import By

        assert counts == {"drawn": 6, "missing": 6}
        figure = "QUBA dimensions radar (Fig. 1)"
        assert driver.find_elements(By.XPATH, f'//figure[@class="plot"][figcaption="{figure}"]/*[name()="svg"]')
        _shaded_after_sorting(driver, "ninco", "Mean FPR@95 on NINCO (Table 3)")
        note = driver.find_element(By.CSS_SELECTOR, "#lca-on-the-line .missing-note").text
        assert "at least three runs with an OOD dataset in common" in note and "imagenet-suite leaderboard" in note
        ascending, descending = _sorted_by_header(driver, "beyond-accuracy-quba", "quba")
        assert len(ascending) == 3 and ascending == sorted(ascending) and descending == ascending[::-1]
    finally:
        driver.quit()


def test_headline_rows_carry_the_runs_intervals_and_directions():
    from imagenet_suite.scoring.presentation.html_run import headline_rows
    from imagenet_suite.scoring.summary.intervals import number_path

    suite = with_reports(suite_json("timm:m", 0.5), **ninco_reports(0.2))
    summary = suite["summary"]
    path = number_path("accuracies", "imagenet_val", "value")
    summary["uncertainty"] = {"ci95": {path: [0.4, 0.6]}, "no_interval": {"ninco.msp.mean_fpr95": "a reason"}}
    rows = headline_rows(summary).set_index("number")
    assert (rows.loc[path, "95 % low"], rows.loc[path, "95 % high"], rows.loc[path, "better"]) == (0.4, 0.6, "↑")
    fpr = rows.loc["ninco.msp.mean_fpr95"]
    assert fpr["better"] == "↓" and np.isnan(fpr["95 % low"]) and fpr["no interval because"] == "a reason"
    assert fpr["paper"] == "Bitterwolf et al. 2023 (NINCO)"


def test_a_figure_without_data_is_named_not_drawn(tmp_path, capsys):
    runs = [write_run(tmp_path, f"m{i}", suite_json(f"timm:m{i}", 0.5)) for i in range(2)]
    assert cli.main(["leaderboard", *map(str, runs), "--out", str(tmp_path / "board")]) == 0
    text = (tmp_path / "board" / "leaderboard.html").read_text()
    assert (
        text.count("<svg") == 0 and text.count('class="missing-figure"') == 9
    )  # QUBA ranking, radar, ρ, Beyond Accuracy's Figs. 13 (runs, published zoo) and 14, shape bias, Borda, LCA
    assert "Not drawn: no model has all nine QUBA dimensions" in text and "imagenet-suite leaderboard" in text
    # a folder of run folders gives the same page
    assert cli.main(["report", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == str(tmp_path / "leaderboard.html")


def test_a_long_table_carries_every_cell_as_cell_text_formats_it():
    """render_table formats column by column; every cell must still read as cell_text gives it (shown text, sort
    key, the reason it is missing), in the HTML rows and in the JSON of the rows beyond them."""
    import html
    import re

    import pandas as pd

    from imagenet_suite.scoring.presentation.html import MISSING, SHOWN_ROWS, Table, cell_text, render_table

    count = SHOWN_ROWS + 23
    rng = np.random.default_rng(3)
    floats = rng.normal(size=count) * 10.0 ** rng.integers(-6, 16, size=count)
    floats[::7], floats[3], floats[5] = np.nan, 2.0, -0.0
    frame = pd.DataFrame(
        {
            "model": [f'm<{i}>&"x"' for i in range(count)],
            "value": floats,
            "share": rng.random(count),
            "seeds": np.arange(count),
            "flag": np.arange(count) % 3 == 0,
            "mixed": [None if i % 5 == 0 else "a" if i % 5 == 1 else float(i) / 3 for i in range(count)],
            "small": rng.random(count).astype(np.float32),
        }
    )
    reasons = {(0, "value"): "not <scored>", (SHOWN_ROWS + 2, "share"): "no run", (4, "absent"): "ignored"}
    text = render_table(Table("t", frame, percent=["share"], reasons=reasons))
    expected = [
        [(*cell_text(value, column == "share"), reasons.get((position, column), "")) for column, value in zip(frame.columns, values, strict=True)]
        for position, values in enumerate(frame.itertuples(index=False, name=None))
    ]  # fmt: skip
    carried = json.loads(re.search(r'<script type="application/json" class="rows">(.*?)</script>', text)[1])
    assert carried == [
        [[shown, key, why] if why else [shown] if key == shown else [shown, key] for shown, key, why in cells]
        for cells in expected
    ]
    assert carried[0][1] == [MISSING, "", "not <scored>"] and carried[SHOWN_ROWS + 2][2][2] == "no run"
    body = re.findall(r'<td data-sort="([^"]*)" class="(\w+)"( title="[^"]*")?>([^<]*)</td>', text)
    assert len(body) == SHOWN_ROWS * frame.shape[1]
    wanted = [cell for cells in expected[:SHOWN_ROWS] for cell in cells]
    for (key, _, title, shown), (want_shown, want_key, why) in zip(body, wanted, strict=True):
        assert (html.unescape(shown), html.unescape(key)) == (want_shown, want_key)
        assert html.unescape(title[len(' title="') : -1]) == why if why else not title


def test_a_laid_out_figure_is_drawn_once_into_the_svg_or_png_savefig_writes(monkeypatch, tmp_path):
    """``figure_svg`` and ``save_png`` remove the placeholder layout engine ``tight_layout()`` leaves (with it,
    ``savefig`` draws the figure twice, the first time to run an engine that does nothing): one draw, the same SVG or
    PNG byte for byte. Where the rc settings lay figures out at save time, the engine is left alone."""
    import io

    import matplotlib
    import pandas as pd
    from matplotlib.figure import Figure

    from imagenet_suite.scoring.presentation.figure_files import save_png
    from imagenet_suite.scoring.presentation.html import figure_svg
    from imagenet_suite.scoring.presentation.plots import correlation_heatmap

    rho = pd.DataFrame(np.linspace(-1, 1, 36).reshape(6, 6), index=list("abcdef"), columns=list("abcdef"))

    def heatmap_plot(frame):
        return correlation_heatmap(frame, frame.abs())

    frame = rho
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "heat"}):
        heatmap_plot(frame).savefig(buffer, format="svg", metadata={"Date": None})
    expected = buffer.getvalue()[buffer.getvalue().index("<svg") :]
    draws = []
    draw = Figure.draw
    monkeypatch.setattr(Figure, "draw", lambda figure, renderer: (draws.append(figure), draw(figure, renderer))[1])
    assert figure_svg(heatmap_plot(frame), "heat") == expected
    assert len(draws) == 1
    with matplotlib.rc_context({"figure.autolayout": True}):
        kept = heatmap_plot(frame)
        figure_svg(kept, "heat")
    assert type(kept.get_layout_engine()).__name__ == "PlaceHolderLayoutEngine" and len(draws) == 3
    heatmap_plot(frame).savefig(tmp_path / "plain.png", dpi=120)
    assert len(draws) == 5  # savefig: the placeholder engine's draw, then the PNG's
    assert save_png(heatmap_plot(frame), tmp_path / "once.png", dpi=120) == tmp_path / "once.png" and len(draws) == 6
    assert (tmp_path / "once.png").read_bytes() == (tmp_path / "plain.png").read_bytes()
