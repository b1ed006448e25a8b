"""The papers' printed aggregates, recomputed from the reference zoos alone (``imagenet_suite.reference``) through
the functions the leaderboard uses. Each test names the table and row it reproduces; a difference is either within
the rounding of what the paper prints or listed with its reason.

* Beyond Accuracy (Hesse et al. 2025): Table 12's QUBA scores and order, Tables 3 and 4's ranks, Table 10's
  Spearman matrix and Table 2 (i), from the project page's per-model values.
* LCA-on-the-Line (Shi et al. 2024): every cell of Tables 2, 3 and 9 from the released per-model values, through
  the leaderboard; the LCA rows of ImageNet-Sketch and ImageNet-A use the depth-based LCA, which is not released.
* NINCO (Bitterwolf et al. 2023): Table 3's best detector per model, Fig. 7's rankings.
* Heuillet et al. 2025: Sum, Borda and their ranks of all 240 rows of Tables 10-12, and Table 4 (MAC), from the
  released measurement table.
* Anzaku et al. 2024: ΔRank's ASMA side; its top-1 side is a dense ranking, recomputed from the printed columns.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from imagenet_suite import reference
from imagenet_suite.scoring.metrics import aggregates
from imagenet_suite.scoring.metrics.lca_on_the_line import analyze
from imagenet_suite.scoring.metrics.multilabel import delta_rank
from imagenet_suite.scoring.metrics.quba import DIMENSIONS, QUBA_STD, quba_score, quba_weights, rank_descending
from imagenet_suite.scoring.summary.groups import ModelGroups
from imagenet_suite.scoring.summary.papers.hesse2025 import dimension_correlations, group_comparisons, quba_ranking
from tests.test_read_runs import suite_json
from tests.test_scoring_aggregates import RANKINGS

# ------------------------------------------------------------------ Beyond Accuracy (Hesse et al. 2025)


@pytest.fixture(scope="module")
def zoo() -> pd.DataFrame:
    return reference.load("hesse2025_table12").set_index("id")


def page_rounding_bound() -> float:
    """How far a QUBA recomputed from the project page's values may lie from Table 12's: half a unit of the page's
    last digit in every dimension (four decimals, parameters one), z-scored and weighted as Eq. 1, plus half a unit
    of the printed QUBA (two decimals)."""
    half_units = np.array([0.5e-4] * 8 + [0.05])
    weights = quba_weights()
    return float((half_units / QUBA_STD * weights).sum() / weights.sum()) + 0.005


def test_table_12_quba_is_recomputed_from_the_page_values_within_their_rounding(zoo):
    recomputed = quba_score(zoo[list(DIMENSIONS)].to_numpy())
    error = np.abs(recomputed - zoo["quba"].to_numpy())
    assert page_rounding_bound() < 0.01
    assert error.max() <= page_rounding_bound(), zoo.index[int(np.argmax(error))]
    assert error.mean() < 0.004


def test_table_12_order_is_its_printed_quba_but_one_near_tie(zoo):
    """Table 12 lists the models by QUBA: each paper rank lies in its printed score's tie range, but ConViT-b
    (printed 0.45) sits above InceptionNext-s (0.46): recomputed 0.4549 and 0.4551, a tie the two printed
    roundings split the other way."""
    best, worst = rank_descending(zoo["quba"], ties="min"), rank_descending(zoo["quba"], ties="max")
    outside = zoo.index[~((best <= zoo["paper_rank"]) & (zoo["paper_rank"] <= worst)).to_numpy()]
    assert sorted(zoo.loc[outside, "model"]) == ["ConViT-b", "InceptionNext-s"]
    pair = quba_score(zoo.loc[outside, list(DIMENSIONS)].to_numpy())
    assert abs(pair[0] - pair[1]) < 0.001


# Table 3 (the five best by QUBA, top first) and Table 4 ("QUBA / Rank"), with their Table 12 rows' ids
QUBA_TABLE3 = [
    "EVA02-b (Fang, IN21k, self-SL (E2E))",
    "Hiera-B-Plus (Ryali, IN1k, self-SL (E2E))",
    "ConvNextV2-B (Woo, IN21k, self-SL (E2E))",
    "Hiera-B (Ryali, IN1k, self-SL (E2E))",
    "EfficientNet-B6 (Xie, JFT+IN1k, semi-SL)",
]
QUBA_TABLE4 = {  # Table 4's name -> (Table 12 id, published QUBA, published rank)
    "CLIP-L/14": ("CLIP-L14-OpenAI (Radford, WIT400M, self-SL (E2E))", -0.65, 243),
    "ResNet50": ("ResNet50 (He, IN1k, SL)", -0.31, 214),
    "ViT-b/16": ("ViT-b/16 (Dosovitskiy, IN1k, SL)", 0.20, 124),
    "ViT-b/16-MAE": ("ViT-b/16-MAE (He, IN1k, self-SL (E2E))", 0.36, 84),
    "DINOv2-B-reg": ("ViT-B/14-DINOv2-reg-LP (Darcet, LVD142m, self-SL (LP))", 0.74, 25),
    "SwinV2-b/12to16": ("SwinV2-b/12to16 (Liu, IN21k, SL)", 0.90, 8),
}


def test_tables_3_and_4_ranks_through_the_leaderboards_quba_ranking(zoo):
    """The leaderboard's QUBA table (``quba_ranking`` on suite.json summaries holding the page's values) ranks
    Table 3's five first, in order, and gives Table 4's ranks but ViT-b/16's: 123, not 124 — it and
    Inception-ResNetv2 (printed 0.20 both) are 0.0038 apart, within the page values' rounding."""
    suites = {}
    for ident, row in zoo.iterrows():
        suite = suite_json(ident, row["accuracy"])
        suite["summary"]["quba"]["dimensions"] = {d: {"value": float(row[d]), "sources": []} for d in DIMENSIONS}
        suite["summary"]["quba"]["missing"] = {}
        suites[ident] = suite
    table, missing = quba_ranking(suites)
    assert not missing and len(table) == 326
    assert table.index[:5].tolist() == QUBA_TABLE3
    assert table["quba_rank"].iloc[:5].tolist() == [1, 2, 3, 4, 5]
    for name, (ident, quba, rank) in QUBA_TABLE4.items():
        assert zoo.loc[ident, "quba"] == quba and zoo.loc[ident, "paper_rank"] == rank, name
        expected = 123 if name == "ViT-b/16" else rank
        assert table.loc[ident, "quba_rank"] == expected, name
    neighbour = table.loc["Inception-ResNetv2 (Szegedy, IN1k, SL)"]
    assert neighbour["quba_rank"] == 124 and table.loc[QUBA_TABLE4["ViT-b/16"][0], "quba"] - neighbour["quba"] < 0.004
    rho = stats.spearmanr(table["quba_rank"], zoo.loc[table.index, "paper_rank"]).statistic
    assert rho > 0.9999


# Table 10, the legible entries: (dimension, dimension) -> printed ρ and p (None: not legible in the PDF text)
QUBA_TABLE10 = {
    ("accuracy", "c_robustness"): (0.62, 0.00),
    ("accuracy", "ood_robustness"): (0.35, 0.00),
    ("accuracy", "calibration_error"): (-0.12, 0.03),
    ("accuracy", "class_balance"): (0.53, 0.00),
    ("accuracy", "object_focus"): (0.72, 0.00),
    ("accuracy", "shape_bias"): (0.26, 0.00),
    ("accuracy", "params_millions"): (0.31, 0.00),
    ("adversarial_robustness", "c_robustness"): (0.01, 0.84),
    ("adversarial_robustness", "ood_robustness"): (-0.08, 0.15),
    ("adversarial_robustness", "calibration_error"): (0.07, None),
    ("adversarial_robustness", "class_balance"): (0.08, None),
    ("adversarial_robustness", "object_focus"): (0.45, 0.00),
    ("adversarial_robustness", "params_millions"): (0.18, 0.00),
    ("c_robustness", "ood_robustness"): (0.80, 0.00),
    ("c_robustness", "calibration_error"): (0.08, None),
    ("c_robustness", "class_balance"): (0.73, None),
    ("c_robustness", "object_focus"): (0.64, 0.00),
    ("c_robustness", "shape_bias"): (0.61, 0.00),
    ("c_robustness", "params_millions"): (0.44, 0.00),
    ("ood_robustness", "class_balance"): (0.76, None),
    ("ood_robustness", "params_millions"): (0.43, 0.00),
    ("calibration_error", "object_focus"): (0.09, None),
    ("calibration_error", "params_millions"): (0.11, 0.05),
    ("class_balance", "object_focus"): (0.57, None),
    ("class_balance", "params_millions"): (0.47, 0.00),
    ("object_focus", "params_millions"): (0.48, 0.00),
    ("shape_bias", "params_millions"): (0.53, 0.00),
}


def test_table_10_spearman_matrix_of_the_326_models(zoo):
    """ρ to its printed two decimals (within 0.0051), p too; the pairs with calibration error within 0.0065: the
    page gives calibration errors (0.001 to 0.04) to four decimals, whose ties move ρ by a few thousandths
    (adversarial robustness / calibration error: 0.0639 against the printed .07)."""
    rho, p, n = dimension_correlations(zoo[list(DIMENSIONS)])
    assert (n.to_numpy() == 326).all() and np.diag(rho) == pytest.approx(np.ones(9), abs=1e-12)
    for (a, b), (printed, p_printed) in QUBA_TABLE10.items():
        tolerance = 0.0065 if "calibration_error" in (a, b) else 0.0051
        assert rho.loc[a, b] == pytest.approx(printed, abs=tolerance) and rho.loc[b, a] == rho.loc[a, b], (a, b)
        if p_printed is not None:
            assert p.loc[a, b] == pytest.approx(p_printed, abs=0.0051), (a, b)
    # the text: "calibration error is only statistically significantly correlated with OOD robustness, class
    # balance, and shape bias" (besides accuracy and parameters, which Table 10 marks significant too)
    significant = {d for d in DIMENSIONS if d != "calibration_error" and p.loc["calibration_error", d] < 0.05}
    assert significant == {"accuracy", "ood_robustness", "class_balance", "shape_bias", "params_millions"}


# Table 9 (i): the 12 standard models and their B-cos counterparts (Table 12 rows: model, source)
STANDARD = [(f"ResNet{d}", "He") for d in (18, 34, 50, 101, 152)] + [
    *((f"DenseNet{d}", "Huang") for d in (121, 161, 169, 201)),
    ("ViT-b/16", "Dosovitskiy"),
    ("ConvNext-T", "Liu"),
    ("ConvNext-B", "Liu"),
]
BCOS = [(name.replace("ConvNext", "ConvNeXt"), "Böhle") for name, _ in STANDARD]
# Table 2 (i), printed: (mean, marks) per dimension for the standard and the B-cos models
QUBA_TABLE2_I = {
    "Standard": [(0.77, ""), (0.07, ""), (0.58, ""), (0.56, ""), (0.0033, ""), (0.77, ""), (0.93, ""), (0.27, ""),
                 (37, "")],
    "B-cos": [(0.75, "*"), (0.02, "***"), (0.26, "***"), (0.46, "***"), (0.0115, "***"), (0.75, "*"), (0.90, "***"),
              (0.27, ""), (36, "")],
}  # fmt: skip


def test_table_2_setup_i_group_means_and_marks(zoo):
    """Table 2 (i) through ``group_comparisons`` (the leaderboard's Table 2): the means to the printed digits,
    every mark (two-sided Student's t-test)."""
    ids = {f"{model} ({source}, IN1k, SL)": group for group, members in (("Standard", STANDARD), ("B-cos", BCOS))
           for model, source in members}  # fmt: skip
    result = group_comparisons(zoo[list(DIMENSIONS)], ModelGroups.from_mapping(ids, setup="(i)"))
    for group, printed in QUBA_TABLE2_I.items():
        part = result[result.group == group].set_index("dimension")
        for dimension, (mean, mark) in zip(DIMENSIONS, printed, strict=True):
            tolerance = 0.51 if dimension == "params_millions" else 0.0051 if mean > 0.01 else 0.00051
            assert part.loc[dimension, "mean"] == pytest.approx(mean, abs=tolerance), (group, dimension)
            assert part.loc[dimension, "stars"] == mark, (group, dimension, part.loc[dimension, "p_value"])
            assert part.loc[dimension, "models"] == 12


# ---------------------------------------------------------------------- LCA-on-the-Line (Shi et al. 2024)

SETS = ("imagenet_v2", "imagenet_sketch", "imagenet_r", "imagenet_a", "objectnet")
INFO_SETS = ("imagenet_v2", "imagenet_r", "objectnet")  # the sets whose published LCA is the released (info) one
# Table 2 (|R²|, |Pearson|), Table 9 (|Kendall τ-b|, |Spearman|) and Table 3 (MAE), printed, per set in SETS order:
# (group, x, y) -> values; x: id_top1 (the baseline) or id_lca; y: OOD top-1 or top-5
LCA_TABLE2 = {
    ("ALL", "id_top1", "ood_top1"): [(0.962, 0.980), (0.075, 0.275), (0.020, 0.140), (0.009, 0.094), (0.273, 0.522)],
    ("ALL", "id_lca", "ood_top1"): [(0.339, 0.582), (0.838, 0.915), (0.779, 0.883), (0.869, 0.932), (0.915, 0.956)],
    ("ALL", "id_top1", "ood_top5"): [(0.889, 0.943), (0.052, 0.229), (0.004, 0.060), (0.013, 0.115), (0.262, 0.512)],
    ("ALL", "id_lca", "ood_top5"): [(0.445, 0.667), (0.883, 0.940), (0.738, 0.859), (0.909, 0.953), (0.924, 0.961)],
    ("VLM", "id_top1", "ood_top1"): [(0.996, 0.998), (0.860, 0.927), (0.851, 0.923), (0.578, 0.761), (0.945, 0.972)],
    ("VLM", "id_lca", "ood_top1"): [(0.956, 0.978), (0.922, 0.960), (0.889, 0.943), (0.792, 0.900), (0.936, 0.968)],
    ("VLM", "id_top1", "ood_top5"): [(0.988, 0.994), (0.867, 0.931), (0.820, 0.906), (0.740, 0.860), (0.970, 0.985)],
    ("VLM", "id_lca", "ood_top5"): [(0.930, 0.964), (0.949, 0.974), (0.848, 0.921), (0.828, 0.910), (0.931, 0.965)],
    ("VM", "id_top1", "ood_top1"): [(0.996, 0.998), (0.824, 0.908), (0.801, 0.895), (0.523, 0.723), (0.900, 0.949)],
    ("VM", "id_lca", "ood_top1"): [(0.976, 0.988), (0.895, 0.945), (0.768, 0.877), (0.833, 0.912), (0.913, 0.956)],
    ("VM", "id_top1", "ood_top5"): [(0.993, 0.997), (0.829, 0.910), (0.821, 0.906), (0.696, 0.834), (0.919, 0.959)],
    ("VM", "id_lca", "ood_top5"): [(0.970, 0.985), (0.925, 0.962), (0.777, 0.882), (0.925, 0.962), (0.936, 0.967)],
}
LCA_TABLE9 = {
    ("ALL", "id_top1", "ood_top1"): [(0.840, 0.947), (0.170, 0.092), (0.146, 0.042), (0.068, 0.037), (0.317, 0.339)],
    ("ALL", "id_lca", "ood_top1"): [(0.421, 0.517), (0.828, 0.937), (0.761, 0.911), (0.813, 0.948), (0.867, 0.967)],
    ("ALL", "id_top1", "ood_top5"): [(0.672, 0.818), (0.151, 0.059), (0.134, 0.004), (0.108, 0.021), (0.279, 0.297)],
    ("ALL", "id_lca", "ood_top5"): [(0.571, 0.729), (0.843, 0.948), (0.752, 0.897), (0.817, 0.947), (0.861, 0.966)],
    ("VLM", "id_top1", "ood_top1"): [(0.971, 0.997), (0.840, 0.936), (0.864, 0.943), (0.753, 0.915), (0.905, 0.982)],
    ("VLM", "id_lca", "ood_top1"): [(0.882, 0.972), (0.867, 0.959), (0.762, 0.886), (0.800, 0.942), (0.870, 0.972)],
    ("VM", "id_top1", "ood_top1"): [(0.948, 0.993), (0.771, 0.901), (0.743, 0.887), (0.735, 0.877), (0.822, 0.927)],
    ("VM", "id_lca", "ood_top1"): [(0.910, 0.981), (0.825, 0.949), (0.705, 0.862), (0.782, 0.920), (0.838, 0.957)],
}
LCA_TABLE3 = {  # in-sample MAE of the min-max scaled line, OOD top-1
    ("ALL", "id_top1"): (0.040, 0.230, 0.277, 0.192, 0.178),
    ("ALL", "id_lca"): (0.162, 0.078, 0.107, 0.061, 0.048),
    ("VLM", "id_top1"): (0.014, 0.077, 0.064, 0.127, 0.052),
    ("VLM", "id_lca"): (0.047, 0.059, 0.062, 0.094, 0.043),
    ("VM", "id_top1"): (0.013, 0.099, 0.108, 0.143, 0.068),
    ("VM", "id_lca"): (0.029, 0.079, 0.113, 0.080, 0.056),
}
PRINTED = 0.0011  # three printed decimals, some truncated rather than rounded
# The published cells of the information-based sets the released values do not give (reason: unexplained; the
# other statistics of the same rows do reproduce): Table 2's VLM / ImageNet-R LCA cells (Table 9's reproduce),
# every VM / ObjectNet LCA cell, Table 3's ALL and VLM / ImageNet-R LCA MAE (Table 2's ALL / R reproduce). Ruled
# out: the VLM / VM split (the released is_VLM is the code's name filter), dropping one or two models, the
# full-precision LCA of logger.txt, the top-5 LCA, a probit or logit axis; every printed cell is stronger than the
# released values give, as if those cells came from another LCA (the depth-based one?), which is not released.
NOT_REPRODUCED = {
    ("Table 2", "VLM", "id_lca", "ood_top1", "imagenet_r"),
    ("Table 2", "VLM", "id_lca", "ood_top5", "imagenet_r"),
    ("Table 2", "VM", "id_lca", "ood_top1", "objectnet"),
    ("Table 2", "VM", "id_lca", "ood_top5", "objectnet"),
    ("Table 9", "VM", "id_lca", "ood_top1", "objectnet"),
    ("Table 3", "ALL", "id_lca", "ood_top1", "imagenet_r"),
    ("Table 3", "VLM", "id_lca", "ood_top1", "imagenet_r"),
    ("Table 3", "VM", "id_lca", "ood_top1", "objectnet"),
}


@pytest.fixture(scope="module")
def lca() -> pd.DataFrame:
    return reference.load("shi2024_results")


@pytest.fixture(scope="module")
def on_the_line(lca):
    """The leaderboard's LCA-on-the-Line tables of 75 runs holding the released per-model values: ImageNet-val
    top-1 and LCA (``info``, the only distance released), top-1 and top-5 on the five shifted sets (keyed and
    named by their builders), the paper's VLM / VM groups."""
    from imagenet_suite.scoring.summary.leaderboard import leaderboard
    from tests.test_leaderboard_papers import lca_suite

    suites, groups = {}, {}
    for model, part in lca.groupby("model", sort=False):
        first = part.iloc[0]
        ood = {r.ood_dataset: (r.ood_top1, r.ood_top5) for r in part.itertuples()}
        suite = lca_suite(model, first.id_top1, first.id_lca, ood)
        metrics = suite["datasets"]["imagenet_val"]["metrics"]
        metrics[:] = [r for r in metrics if r.get("variant") != "depth_two_sided"]  # not released
        suites[model], groups[model] = suite, first.group
    return leaderboard(suites, groups=ModelGroups.from_mapping(groups)).on_the_line


def measured(on_the_line, table: str, group: str, x: str, y: str, ood: str) -> tuple[float, ...]:
    """A published cell from the leaderboard's statistics: the ImageNet top-1 row, or the ImageNet LCA row in
    the released distance (``info``)."""
    s = on_the_line.statistics
    indicator = {"id_lca": "ImageNet LCA", "id_top1": "ImageNet top-1"}[x]
    target = {"ood_top1": "OOD top-1", "ood_top5": "OOD top-5"}[y]
    found = s[(s.ood_dataset == ood) & (s.group == group) & (s.indicator == indicator) & (s.target == target)]
    entry = found[found.distance == ("info" if x == "id_lca" else "")].iloc[0]
    return {
        "Table 2": (entry.r2, abs(entry.pearson)),
        "Table 9": (abs(entry.kendall_tau_b), abs(entry.spearman)),
        "Table 3": (entry.mae_in_sample,),
    }[table]


def published_cells():
    for (group, x, y), rows in LCA_TABLE2.items():
        for ood, values in zip(SETS, rows, strict=True):
            yield "Table 2", group, x, y, ood, values
    for (group, x, y), rows in LCA_TABLE9.items():
        for ood, values in zip(SETS, rows, strict=True):
            yield "Table 9", group, x, y, ood, values
    for (group, x), values in LCA_TABLE3.items():
        for ood, value in zip(SETS, values, strict=True):
            yield "Table 3", group, x, "ood_top1", ood, (value,)


def test_lca_on_the_line_tables_2_3_and_9_from_the_released_values(on_the_line, lca):
    """Through the leaderboard, every ImageNet top-1 row (all five sets, top-1 and top-5 targets) and every
    information-based LCA row (ImageNetV2, ImageNet-R, ObjectNet: the paper's distance there, rows marked
    ``paper``) reproduces to the printed decimals, but the cells of :data:`NOT_REPRODUCED`. ImageNet-Sketch and
    ImageNet-A get no paper row: the paper takes the depth-based LCA there (App. E.2, ``depth_two_sided``), whose
    per-model values are not released (the repository's ``ICML_dict_result_metric_dict``, which held each model's
    predictions, is not in it; ``coefficient_metric_dict_ICML_dict``, ``logger.txt`` and the results CSVs hold the
    information-based LCA only, the ``*.npy`` files pairwise agreements). Their ``info`` rows, marked ``other``,
    predict worse than printed: lower correlations, a larger MAE (ALL, Sketch: R² 0.815 against 0.838)."""
    s = on_the_line.statistics
    lca_rows = s[s.indicator == "ImageNet LCA"]
    assert set(lca_rows.loc[lca_rows.paper, "ood_dataset"]) == set(INFO_SETS)
    assert set(lca_rows.loc[~lca_rows.paper, "ood_dataset"]) == set(SETS) - set(INFO_SETS)
    assert set(lca_rows.distance) == {"info"} and s.loc[s.indicator == "ImageNet top-1", "paper"].all()
    assert sorted(on_the_line.lacking) == [f"{ood} `depth_two_sided`" for ood in sorted(SETS)]
    assert all(len(models) == 75 for models in on_the_line.lacking.values())
    failed, depth_matching = set(), set()
    for table, group, x, y, ood, printed in published_cells():
        got = measured(on_the_line, table, group, x, y, ood)
        close = got == pytest.approx(printed, abs=PRINTED)
        cell = (table, group, x, y, ood)
        if x == "id_lca" and ood not in INFO_SETS:  # depth-based in the paper
            if close:
                depth_matching.add(cell)
            else:  # the information-based LCA predicts worse: lower correlations, a larger MAE
                assert got[0] > printed[0] if table == "Table 3" else got[0] < printed[0], cell
        elif not close:
            failed.add(cell)
    assert failed == NOT_REPRODUCED
    # one depth-based cell equals the information-based value: Table 9's VLM / ImageNet-A
    assert depth_matching == {("Table 9", "VLM", "id_lca", "ood_top1", "imagenet_a")}
    # the leaderboard's fit is the paper's (analyze, min-max scaled) on the released columns
    part = lca[lca.ood_dataset == "imagenet_sketch"]
    direct = analyze(part.id_lca.to_numpy(), part.ood_top1.to_numpy(), scale="minmax")
    assert measured(on_the_line, "Table 3", "ALL", "id_lca", "ood_top1", "imagenet_sketch") == pytest.approx(
        (direct.mae_in_sample,), abs=1e-12
    )


def test_lca_groups_are_the_papers_pool(lca):
    """75 models, 39 VLMs and 36 VMs (Table 8's caption says 77: 40 and 37)."""
    counts = lca[lca.ood_dataset == "objectnet"].groupby("group").size().to_dict()
    assert counts == {"VLM": 39, "VM": 36}


# -------------------------------------------------------------------------- NINCO (Bitterwolf et al. 2023)

# Table 3: the detector printed bold (the best, lowest mean FPR@95) per model; the zero-shot rows mark none
NINCO_TABLE3_BOLD = {
    "ViT-B-384-21k": "mahalanobis",
    "ViT-B-224-21k": "mahalanobis",
    "Swinv2-B-256-21k": "react_energy",
    "Deit3-B-384-21k": "rcos",
    "Deit3-B-224-21k": "rcos",
    "CnvNxt-B-21k": "react_energy",
    "CnvNxt-T-21k": "vim",
    "BiT-m": "vim",
    "EffNetv2-M-21k": "cosine",
    "ViT-B-384": "relative_mahalanobis",
    "Swinv2-B-256": "relative_mahalanobis",
    "Deit3-B-384": "rcos",
    "Deit3-B-224": "rcos",
    "XCiT-M-224": "relative_mahalanobis",
    "XCiT-M-224-d": "relative_mahalanobis",
    "CnvNxt-B": "rcos",
    "BiT-s": "relative_mahalanobis",
    "EffNetv2-M": "rcos",
    "EffNetb7": "rcos",
    "EffNet-B0": "cosine",
    "ResNet50": "rcos",
    "EffNetb7-ns": "maxlogit",
    "ViT-B-384-l2b-12k": "cosine",
    "ViT-B-384-oai-12k": "rcos",
    "ViT-B-384-l2b": "rcos",
    "ViT-B-384-oai": "relative_mahalanobis",
}


@pytest.fixture(scope="module")
def ninco() -> pd.DataFrame:
    return reference.load("bitterwolf2023_table3_fpr95", fractions=True).set_index("model")


def detector_ranks(row: pd.Series) -> pd.Series:
    """Detectors of one model ranked by FPR@95 (1 = lowest), ``min`` ties: the leaderboard's rank function."""
    return rank_descending(-row.dropna()).set_axis(row.dropna().index)


def test_table_3_best_detector_per_model(ninco):
    for model, bold in NINCO_TABLE3_BOLD.items():
        ranks = detector_ranks(ninco.loc[model, list(reference.NINCO_DETECTORS)])
        assert ranks.index[ranks == 1].tolist() == [bold], model


def test_figure_7_rankings_on_ninco(ninco):
    """Fig. 7 / Sec. 4: with the IN-21k ViT-B-384, Mahalanobis is the best detector and Relative Mahalanobis the
    second; the MSP baseline is best with ConvNeXt-B (IN-21k); Mahalanobis on that ViT is the best pair of all."""
    ranks = detector_ranks(ninco.loc["ViT-B-384-21k", list(reference.NINCO_DETECTORS)])
    assert ranks["mahalanobis"] == 1 and ranks["relative_mahalanobis"] == 2
    assert ninco["msp"].idxmin() == "CnvNxt-B-21k"
    detectors = ninco[list(reference.NINCO_DETECTORS)].stack()
    assert detectors.idxmin() == ("ViT-B-384-21k", "mahalanobis")


def test_msp_fpr_falls_with_accuracy(ninco):
    """Sec. 4: "For MSP, the mean FPR decreases roughly linearly with accuracy" (the 26 models with MSP)."""
    rows = ninco.dropna(subset=["msp"])
    assert len(rows) == 26 and stats.pearsonr(rows.imagenet_top1, rows.msp).statistic < -0.7


# ------------------------------------------------------------------------------- Heuillet et al. 2025


@pytest.fixture(scope="module")
def robustgen() -> pd.DataFrame:
    return reference.load("heuillet2025_results")


def test_tables_10_to_12_sum_borda_and_ranks_from_the_measurements(robustgen, test_data):
    """All 240 rows of Tables 10-12 (tests/data transcription): Borda exactly, Sum to its six printed decimals,
    both ranks exactly, through the leaderboard's voter matrix, Sum, Borda and rank functions."""
    published = pd.read_csv(test_data / RANKINGS)
    key = ["backbone_name", "loss", "pre_training_strategy", "model_size"]
    for protocol, part in robustgen.groupby("protocol"):
        matrix = aggregates.voter_matrix(part, config=["backbone", "loss"], dataset="dataset")
        scores = pd.DataFrame(
            {"score_sum": aggregates.sum_score_of(matrix), "borda": aggregates.borda_score_of(matrix)}
        )
        scores["rank_sum"] = aggregates.global_rank(scores["score_sum"])
        scores["rank_borda"] = aggregates.global_rank(scores["borda"])
        names = part.drop_duplicates(["backbone", "loss"]).set_index(["backbone", "loss"])
        scores = scores.join(names[["backbone_name", "pre_training_strategy", "model_size"]]).reset_index()
        merged = published[published.protocol == protocol].merge(scores, on=key, suffixes=("", "_ours"))
        assert len(merged) == 80 and not merged.duplicated(key).any(), protocol
        assert (merged.borda == merged.borda_ours).all(), protocol
        assert np.abs(merged.score_sum - merged.score_sum_ours).max() <= 5e-7, protocol
        assert (merged.rank_borda == merged.rank_borda_ours).all() and (merged.rank_sum == merged.rank_sum_ours).all()


# Table 4 (MAC, FFT-50): group -> per-dataset MAC (caltech101, aircraft, flowers, pets, cars, land use) and average
HEUILLET_TABLE4 = {
    ("all", None): (0.847, 0.782, 0.805, 0.681, 0.849, 0.807, 0.795),
    ("Classic AT", "loss"): (0.876, 0.702, 0.842, 0.778, 0.844, 0.890, 0.822),
    ("TRADES", "loss"): (0.823, 0.884, 0.830, 0.669, 0.896, 0.777, 0.813),
    ("large", "model_size"): (0.825, 0.882, 0.860, 0.859, 0.871, 0.803, 0.850),
    ("medium", "model_size"): (0.743, 0.628, 0.743, 0.436, 0.701, 0.833, 0.681),
    ("small", "model_size"): (0.911, 0.531, 0.503, 0.467, 0.575, 0.678, 0.611),
    ("fully attention", "model_type"): (0.884, 0.800, 0.761, 0.713, 0.856, 0.882, 0.816),
    ("fully convolutional", "model_type"): (0.762, 0.756, 0.811, 0.574, 0.818, 0.719, 0.740),
    ("hybrid", "model_type"): (0.951, 0.815, 0.892, 0.798, 0.889, 0.879, 0.871),
    ("fusion", "pre_training_strategy"): (0.760, 0.760, 0.920, 0.660, 0.920, 1.000, 0.837),
    ("self-supervised", "pre_training_strategy"): (0.821, 0.902, 0.860, 0.619, 0.878, 0.668, 0.791),
    ("self-supervised (multimodal)", "pre_training_strategy"): (0.911, 0.742, 0.760, 0.589, 0.855, 0.703, 0.760),
    ("supervised", "pre_training_strategy"): (0.937, 0.760, 0.727, 0.682, 0.806, 0.789, 0.783),
    ("supervised (multistep)", "pre_training_strategy"): (0.867, 0.809, 0.846, 0.893, 0.856, 0.798, 0.845),
    ("supervised (robust)", "pre_training_strategy"): (0.568, 0.641, 0.841, 0.670, 0.685, 0.877, 0.714),
}


def test_table_4_mac_of_fft_50(robustgen):
    fft50 = robustgen[robustgen.protocol == "FFT-50"]
    for (group, column), printed in HEUILLET_TABLE4.items():
        table = aggregates.mean_absolute_correlation(fft50, group=column)
        assert table.loc[group].tolist() == pytest.approx(printed, abs=0.0005), group


# ------------------------------------------------------------------------------- Anzaku et al. 2024

# Table 3's "Rank" column: the ImageNetV1 top-1 rank of its ten models (the ten first of Tables 4-10)
ANZAKU_TABLE3_TOP1_RANKS = (14, 8, 56, 57, 63, 69, 10, 36, 51, 81)


@pytest.fixture(scope="module")
def anzaku() -> pd.DataFrame:
    return reference.load("anzaku2024_tables4_10").set_index("model")


def test_delta_rank_asma_side_is_the_printed_patchml_asma(anzaku):
    """Tables 4-10 sort by PatchML ASMA: every row's position lies in its printed ASMA's tie range (``min`` to
    ``max`` rank), the ASMA rank of ΔRank; with Table 3's top-1 ranks, ΔRank = top-1 rank − position there."""
    best, worst = rank_descending(anzaku.asma_patchml, "min"), rank_descending(anzaku.asma_patchml, "max")
    assert ((best <= anzaku.paper_order) & (anzaku.paper_order <= worst)).all()
    top10 = anzaku.iloc[:10]
    assert (np.array(ANZAKU_TABLE3_TOP1_RANKS) - top10.paper_order.to_numpy() == top10.delta_rank.to_numpy()).all()


def table3_inconsistent(anzaku: pd.DataFrame) -> set[str]:
    """The models the published top-1 ranks (position + ΔRank) put at or above a model printed higher."""
    implied = (anzaku.paper_order + anzaku.delta_rank).to_numpy()
    top1 = anzaku.top1_v1.to_numpy()
    below = (top1[:, None] > top1[None, :]) & (implied[:, None] >= implied[None, :])  # [high, low]
    return set(anzaku.index[below.any(axis=0)])


def test_delta_rank_top1_side_is_a_dense_ranking(anzaku):
    """The top-1 ranks behind ΔRank (position + ΔRank) follow the printed ImageNetV1 top-1 column but for six of
    Table 3's ten models (its Rank column puts them one or two places too high); over the other 309 models they
    are a *dense* ranking of the unrounded top-1: ten ranks are shared by two models each (e.g. two EVA-02
    checkpoints at 89.46 % share rank 3), and the next model always has the next rank (4, not 5 as ``min`` ranks
    would give). Equal printed values need not tie (unrounded they differ: 89.62 % is rank 1 and rank 2)."""
    implied = anzaku.paper_order + anzaku.delta_rank
    odd = table3_inconsistent(anzaku)
    assert set(anzaku.loc[sorted(odd), "paper_order"]) == {3, 5, 6, 8, 9, 10}  # Table 3's rows
    ranks = implied.drop(sorted(odd))
    counts = ranks.value_counts()
    shared = sorted(counts[counts > 1].index)
    assert len(shared) == 10 and counts.max() == 2
    assert all(r + 1 in set(ranks) for r in shared)  # dense: a tie does not skip the next rank
    assert len(set(range(1, ranks.max() + 1)) - set(ranks)) == 5  # the places of Table 3's misranked models
    for r in shared:  # a shared rank is a shared printed value
        assert anzaku.loc[ranks.index[ranks == r], "top1_v1"].nunique() == 1


def test_delta_rank_reproduces_the_published_values(anzaku):
    """``delta_rank`` (dense ranks) on the printed columns recomputes the published ΔRank of every model printed
    above 87.77 % (the 38 first by top-1, ranks 1–36 with the ties at 3 and 11, down to the first of Table 3's
    misranked models, eva_large_patch14_196 at 87.77 %), from ranks among all 315 models. The printed values are
    rounded to 0.01 %, so where two models print the same top-1 they are ordered (or tied) as the paper ranks
    them, and the ASMA ties as the tables order them; below 87.77 % the misranked models shift the published ranks.
    ``min`` ranks (ties skip the next rank) recompute 4 of the 38."""
    implied = anzaku.paper_order + anzaku.delta_rank
    top1 = anzaku.top1_v1 - 1e-6 * implied  # printed ties in the paper's order; 1e-6 · 315 < 0.01
    asma = anzaku.asma_patchml - 1e-6 * anzaku.paper_order
    above = anzaku.top1_v1 > 87.77
    assert above.sum() == 38 and not above[sorted(table3_inconsistent(anzaku))].any()
    ours = delta_rank(top1, asma)
    assert ours[above].tolist() == anzaku.delta_rank[above].tolist()
    by_min = rank_descending(top1, ties="min") - rank_descending(asma, ties="min")
    assert (by_min[above] == anzaku.delta_rank[above]).sum() == 4
