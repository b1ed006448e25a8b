"""leaderboard.md and suite.md read well (issue 39 item 4): one legend of the weights instead of a weights
column in every table, — for every missing value (never ``nan``) with the reason said, NINCO in percent in
both files, ↑/↓ in the headers, no table of dashes and no empty figure (each replaced by what is missing
and the command that adds it), and an accuracy plot that says so when every value is 0.

Hand-written suite.json files (``test_read_runs``, ``test_leaderboard_papers``), the CLI in this process.
"""

from __future__ import annotations

import re

from imagenet_suite import cli
from imagenet_suite.scoring.presentation.plots import accuracy_bars_plot
from imagenet_suite.scoring.presentation.suite_markdown import suite_markdown
from tests.test_leaderboard_papers import ninco_reports, with_reports
from tests.test_read_runs import suite_json, write_run


def _tables(text: str) -> list[list[list[str]]]:
    """Every Markdown table of ``text``: its rows (header first, the --- line left out) as lists of cells."""
    tables, current = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            if not line.startswith("|---"):
                current.append([cell.strip() for cell in line.strip("|").split(" | ")])
        elif current:
            tables.append(current)
            current = []
    return tables


def test_leaderboard_md_has_one_weights_legend_no_nan_no_table_of_dashes_and_no_empty_figure(tmp_path, capsys):
    runs = [
        write_run(tmp_path, "m0", suite_json("timm:m0", 0.5)),
        write_run(tmp_path, "m1", with_reports(suite_json("timm:m1", 0.75), **ninco_reports(0.2))),
    ]
    board = tmp_path / "board"
    assert cli.main(["leaderboard", *map(str, runs), "--out", str(board)]) == 0
    capsys.readouterr()
    text = (board / "leaderboard.md").read_text()

    assert text.count("## Models") == 1 and text.count("none (seed 0); weights tag not recorded") == 2  # the legend
    assert not any(row[:2] == ["model", "weights"] for table in _tables(text)[1:] for row in table[:1])
    assert re.search(r"\bnan\b", text, re.I) is None
    for table in _tables(text):
        values = [cell for row in table[1:] for cell in row[1:]]
        assert any(cell not in ("—", "") for cell in values), table  # never a table of dashes only
    # the QUBA table's headers carry the direction; NINCO in percent, with its own arrows
    assert "| model | accuracy ↑ | adversarial_robustness ↑ |" in text and "| calibration_error ↓ |" in text
    assert "| quba ↑ | quba_rank ↓ |" in text and "| imagenet_val ↑ |" in text
    ninco = text.split("### Mean FPR@95 on NINCO (%, ↓ lower is better; Table 3)", 1)[1]
    assert (
        next(line for line in ninco.splitlines() if line.startswith("| timm:m1 |"))
        == "| timm:m1 | 75.0 | 20.0 | 30.0 |"
    )
    # no QUBA score and too few models for a correlation: no empty figure, no 9 x 9 table of dashes; said why
    assert not (board / "leaderboard_quba.png").exists() and not (board / "leaderboard_quba_correlations.png").exists()
    assert "No QUBA ranking figure: no model has all nine dimensions" in text
    assert "Not computed: each entry needs at least 3 models having both dimensions" in text
    assert "leaderboard_quba.png" not in text and "leaderboard_quba_correlations.png" not in text
    assert "a test fails when" not in text and "a unit test counts as failed under the rule `fpr95>0.1`" in text


def test_suite_md_prints_ninco_in_percent_like_the_leaderboard_with_arrows():
    suite = with_reports(suite_json("timm:m1", 0.75), **ninco_reports(0.2))
    text = suite_markdown(suite)
    section = text.split("## NINCO (Bitterwolf et al. 2023): means over the OOD classes", 1)[1]
    assert "| detector | mean AUROC (%) ↑ | mean FPR@95 (%) ↓ | unit tests failed ↓ |" in section
    # ninco_reports(0.2): MSP's macro AUROC 0.2 + 0.5, FPR@95 0.2 — the leaderboard's NINCO table prints 20.0 too
    assert "| msp | 70.0 | 20.0 | 3 of 17 (fpr95>0.1) |" in section
    assert "| dataset | metric | value ↑ | clean rows ↑ |" in text
    assert re.search(r"\bnan\b", text, re.I) is None


def test_an_accuracy_plot_of_zeros_says_so():
    figure = accuracy_bars_plot({"imagenet_val": 0.0, "imagenet_r": 0.0})
    texts = [text.get_text() for text in figure.axes[0].texts]
    assert texts == ["every value is 0 %"] and figure.axes[0].get_xlim() == (0.0, 100.0)
