"""NINCO (Bitterwolf et al. 2023): Tables 19–20 (the NINCO classes without / with ImageNet-21k overlap) and
Figs. 4, 5 and 7 (issue 37).

* The ``ood_detection`` family records each class's ImageNet-21k overlap (the build's ``in21k_overlap`` column)
  beside its per-class rows: 0 for Table 9's "0", else 1 ("?" counts with the overlapping, Appendix L's 9 vs. 55).
* Tables 19–20 through the leaderboard, on the published per-class FPR@95 of MSP with ViT-B-384-21k (Table 7,
  ``tests/data/papers/bitterwolf2023_table7_vit_b_384_21k_msp.csv``), the classes split by NINCO's own
  ``data/NINCO_class_names.csv`` (``tests/data/ninco``): the 55 with overlap average to Table 20's 51.0, the 64 to
  Table 3's 51.8; the 9 without to 508.8 / 9 = 56.5 (Table 19's row of that model is lost in the digest's text).
* Fig. 4 (the per-class FPR@95 cumulated), Fig. 5 (mean FPR@95 vs ImageNet top-1: MSP, and each model's best
  detector) and Fig. 7 (NINCO vs the full
  popular OOD sets, a fixed model and a fixed detector), (leaderboard.html's NINCO section), their labels read back
  from the SVG; without their data each says what is missing.
"""

from __future__ import annotations

import csv
import re

import pandas as pd
import pytest
import torch

from imagenet_suite.errors import OutputsError
from imagenet_suite.scoring.evaluation.options import OodOptions, ScoreOptions
from imagenet_suite.scoring.evaluation.report import score
from imagenet_suite.scoring.outputs import ModelOutputs
from imagenet_suite.scoring.presentation.figures import bitterwolf2023 as figures
from imagenet_suite.scoring.summary.leaderboard import leaderboard, leaderboard_markdown, load_suites
from imagenet_suite.scoring.summary.papers import bitterwolf2023
from tests.test_leaderboard_papers import SHA_N, report, row, with_reports
from tests.test_read_runs import suite_json, write_run
from tests.test_scoring_join import write_dataset_folder

STRING = {"dtype": "string", "_type": "Value"}


def _ninco_folder(root, overlap: list[str]):
    """A NINCO-like split: 12 OOD rows in classes a, b, c (row k in class k % 3) with ``overlap`` per row."""
    return write_dataset_folder(
        root,
        {"id": [f"o{k}" for k in range(12)], "ood_class": [k % 3 for k in range(12)], "in21k_overlap": overlap},
        {"id": STRING, "ood_class": {"names": ["a", "b", "c"], "_type": "ClassLabel"}, "in21k_overlap": STRING},
        protocol={"ood": {"group_column": "ood_class"}},
        split="test",
    )


def _outputs() -> tuple[ModelOutputs, ModelOutputs]:
    generator = torch.Generator().manual_seed(0)
    id_logits, ood_logits = torch.randn(20, 1000, generator=generator), torch.randn(12, 1000, generator=generator)
    id_logits[:, 0] += 4
    return ModelOutputs(id_logits, [f"i{k}" for k in range(20)]), ModelOutputs(ood_logits, [f"o{k}" for k in range(12)])


def test_the_ood_family_records_each_classs_in21k_overlap(tmp_path):
    id_outputs, ood_outputs = _outputs()
    values = {0: "0", 1: "4501:bagpipe(88/97)", 2: "?"}  # NINCO's Table 9: none, an IN-21k class, unclear
    folder = _ninco_folder(tmp_path / "good", [values[k % 3] for k in range(12)])
    options = ScoreOptions(ood=OodOptions(id_outputs=id_outputs, detectors=("msp",)))
    rows = score(folder, ood_outputs, options=options).rows
    assert {(r.subgroup, r.variant, r.value) for r in rows if r.metric == "in21k_overlap"} == {
        ("a", "", 0.0),
        ("b", "", 1.0),
        ("c", "", 1.0),
    }
    assert {r.subgroup for r in rows if r.metric == "fpr95" and r.variant == "msp"} == {"a", "b", "c"}
    mixed = _ninco_folder(tmp_path / "mixed", ["0" if k != 3 else "?" for k in range(12)])  # row 3 is in class a
    with pytest.raises(OutputsError, match=r"OOD class 'a' has several in21k_overlap values \['0', '\?'\]"):
        score(mixed, ood_outputs, options=options)


def _table7() -> tuple[dict[str, float], dict[str, float]]:
    """``({folder: ViT-B-384-21k MSP FPR@95}, {folder: in21k_overlap row value})`` from the vendored data."""
    with open("tests/data/ninco/data/NINCO_class_names.csv", newline="", encoding="utf-8") as handle:
        names = [r for r in csv.reader(handle)][1:]
    folders = {r[4]: (r[0], r[8].strip()) for r in names if r and r[0] and r[8].strip()}  # abbreviation -> ...
    with open("tests/data/papers/bitterwolf2023_table7_vit_b_384_21k_msp.csv", newline="", encoding="utf-8") as f:
        published = {folders[r["class"]][0]: float(r["msp_fpr95"]) / 100 for r in csv.DictReader(f)}
    overlap = {folder: float(value != "0") for folder, value in folders.values() if folder in published}
    assert len(published) == len(overlap) == 64 and sum(v == 0 for v in overlap.values()) == 9
    return published, overlap


def _ninco_run(root, name: str, accuracy: float, fpr: dict[str, dict[str, float]], overlap: dict | None, **more):
    """A run whose ``ninco`` report has per-class FPR@95 rows per detector (``fpr``), their means as the
    ``<detector>:macro`` rows, and ``in21k_overlap`` rows (none when ``overlap`` is None); ``more`` reports."""
    rows = [row("fpr95", sum(v.values()) / len(v), f"{d}:macro") for d, v in fpr.items()]
    rows += [row("fpr95", value, d, name_) for d, per in fpr.items() for name_, value in per.items()]
    rows += [row("in21k_overlap", value, "", name_) for name_, value in (overlap or {}).items()]
    suite = with_reports(suite_json(name, accuracy), **{"ninco/ninco": report("ninco", "ninco", rows, SHA_N)}, **more)
    return write_run(root, name.split(":")[-1], suite)


def test_tables_19_and_20_from_the_published_per_class_fpr(tmp_path):
    published, overlap = _table7()
    other = {name: 0.5 * (1 - flag) + 0.25 for name, flag in overlap.items()}  # 0.75 without overlap, 0.25 with
    runs = [
        _ninco_run(tmp_path, "timm:vit", 0.86, {"msp": published}, overlap),
        _ninco_run(tmp_path, "timm:other", 0.8, {"msp": other, "vim": published}, overlap),
        _ninco_run(tmp_path, "timm:old", 0.7, {"msp": other}, None),  # scored before the rows were recorded
    ]
    board = leaderboard(load_suites(runs))
    table = board.ninco.overlap.set_index(["model", "part", "detector"])
    assert list(board.ninco.overlap.columns) == ["model", "part", "detector", "classes", "fpr95", "auroc"]
    assert table.loc[("timm:vit", "with", "msp"), "classes"] == 55
    assert round(100 * table.loc[("timm:vit", "with", "msp"), "fpr95"], 1) == 51.0  # Table 20, ViT-B-384-21k MSP
    assert round(100 * board.ninco.fpr95.loc["timm:vit", "msp"], 1) == 51.8  # Table 3: the same 64 classes
    assert table.loc[("timm:vit", "without", "msp"), "fpr95"] == pytest.approx(5.088 / 9)  # Table 7's nine, by hand
    assert table.loc[("timm:other", "without", "msp"), "fpr95"] == pytest.approx(0.75)
    assert table.loc[("timm:other", "with", "msp"), "fpr95"] == pytest.approx(0.25)
    assert table.loc[("timm:other", "with", "vim"), "fpr95"] == table.loc[("timm:vit", "with", "msp"), "fpr95"]
    assert table["auroc"].isna().all() and "timm:old" not in set(board.ninco.overlap["model"])
    assert board.ninco.overlap_missing == ["timm:old"]

    text = leaderboard_markdown(board)
    table19 = text.split("Table 19)", 1)[1].split("###", 1)[0]
    table20 = text.split("Table 20)", 1)[1].split("###", 1)[0]
    assert "Mean over the 9 classes" in table19 and "Mean over the 55 classes" in table20
    assert next(line for line in table19.splitlines() if line.startswith("| timm:vit |")).endswith(
        "| 86.0 | 56.5 | — |"
    )
    assert next(line for line in table20.splitlines() if line.startswith("| timm:other |")).endswith("| 25.0 | 51.0 |")
    assert "Without Tables 19–20" in text and "`timm:old`" in text
    written = bitterwolf2023.write(board.ninco, tmp_path)
    assert tmp_path / "leaderboard_ninco_in21k_overlap.csv" in written
    csv_table = pd.read_csv(tmp_path / "leaderboard_ninco_in21k_overlap.csv")
    assert len(csv_table) == 6 and set(csv_table["part"]) == {"without", "with"}


def test_figs_4_5_and_7_drawn_from_the_runs(tmp_path):
    classes = {"a": 1.0, "b": 0.0}
    runs = []
    for i, (msp, vim, places) in enumerate(((0.6, 0.3, 0.5), (0.4, 0.5, 0.7))):
        fpr = {"msp": {"a": msp, "b": msp}, "vim": {"a": vim, "b": vim}}
        rows = [
            row(m, places, d, part) for d in ("msp", "vim") for m in ("fpr95", "auroc") for part in ("", "ninco_sample")
        ]
        places_report = report("popular_ood", "places", rows, SHA_N)
        runs.append(
            _ninco_run(tmp_path, f"timm:m{i}", 0.7 + i / 10, fpr, classes, **{"popular_ood/places": places_report})
        )
    suites = load_suites(runs)
    board = leaderboard(suites)
    drawn = {
        f.name: f.svg
        for f in (figures.per_class_cdf(suites), figures.accuracy_scatter(board), figures.previous_scatter(board))
    }
    fig4 = set(re.findall(r">([^<>]+)<", drawn[figures.CDF]))  # the per-class FPR@95, cumulated; means in the legend
    assert {"fixed model timm:m0: its detectors", "msp (60.0)", "vim (30.0)"} <= fig4
    assert {"fixed detector msp: the models", "timm:m0 (60.0)", "timm:m1 (40.0)"} <= fig4
    fig5 = drawn[figures.ACCURACY]
    # left MSP (every model), right each model's best detector: m0's ViM (30 %), m1's MSP (40 %)
    assert ">MSP<" in fig5 and ">timm:m0 (vim)<" in fig5 and ">timm:m1 (msp)<" in fig5
    fig7 = drawn[figures.PREVIOUS]
    assert ">fixed model timm:m0: its detectors<" in fig7 and ">fixed detector msp: the models<" in fig7
    assert {">msp<", ">vim<", ">timm:m0<", ">timm:m1<"} <= set(re.findall(r">[^<>]+<", fig7))
    panels = figures.previous_panels(board.ninco)
    assert panels[0][1].to_dict("index") == {
        "msp": {"ninco": 0.6, "previous": 0.5},
        "vim": {"ninco": 0.3, "previous": 0.5},
    }
    assert panels[1][1].loc["timm:m1"].to_dict() == {"ninco": 0.4, "previous": 0.7}
    assert panels[1][2] == ["popular_ood/places"]


def test_figs_4_5_and_7_say_what_is_missing(tmp_path):
    runs = [write_run(tmp_path, f"m{i}", suite_json(f"timm:m{i}", 0.5)) for i in range(2)]
    board = leaderboard(load_suites(runs))
    assert "`ninco` config" in figures.accuracy_scatter(board).missing
    assert "per-class rows" in figures.per_class_cdf(load_suites(runs)).missing
    assert "`popular_ood`" in figures.previous_scatter(board).missing
    (tmp_path / "n").mkdir()
    board = leaderboard(load_suites([_ninco_run(tmp_path / "n", "timm:n", 0.8, {"msp": {"a": 0.5}}, {"a": 1.0})]))
    assert figures.accuracy_scatter(board).svg and figures.previous_scatter(board).svg is None
