"""Build the reference zoos (``imagenet_suite/reference/data/``) from their sources: a one-off conversion, kept
so that every number in the package can be traced to the file and commit it came from.

Run from the repository root with the upstream repositories' git directories and the paper texts beside it::

    uv run --frozen python tools/reference_zoos.py --mirrors MIRRORS --papers PAPERS

``MIRRORS/<owner>+<name>/repo`` are git directories of the upstream repositories (read with ``git show``, at
the commits pinned below); ``PAPERS`` holds the four paper files of :data:`PAPER_FILES`: Beyond Accuracy's Table 12
as a CSV transcription (the copy in tests/data/papers), NINCO's Tables 3, 4 and 8 as Markdown transcriptions, and
the text of the NINCO and Anzaku et al. papers (for Table 14 and Tables 4-10). The sha256 of every repository file
the pins name is checked (a changed source stops the script), and every table written is described in
``manifest.json`` (sources, units, licence, columns, sha256). A changed table needs a new entry in
:data:`VERSIONS` (the data's version, SemVer: MAJOR when rows or published values change, MINOR for added tables
or columns, PATCH for metadata).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

REFERENCE_VERSION = "1.1.0"
VERSIONS = [
    {
        "version": "1.0.0",
        "notes": "first release: Hesse et al. 2025 Table 12; Shi et al. 2024 per-model results; Bitterwolf et al. "
        "2023 Tables 3, 4 and 14; Heuillet et al. 2025 results_dataset.csv; Anzaku et al. 2024 Tables 4-10",
    },
    {
        "version": "1.1.0",
        "notes": "added geirhos2019_cue_conflict_humans: the ten human observers' shape and texture decisions per "
        "shape category on the cue-conflict images (model-vs-human's raw data), for the shape-bias plot's human points",
    },
]
OUT = Path("imagenet_suite/reference/data")

# ------------------------------------------------------------------------------------------------ sources

REPOS = {
    "hesse2025": ("visinf/beyond-accuracy", "f330d7c3252d2d3d1849cbb14de158455b56bdda"),
    "shi2024": ("ElvishElvis/LCA-on-the-line", "8c0e74d06dddff43ebb5f484a533eb806a8c16df"),
    "heuillet2025": ("MaxHeuillet/robust_training", "2ff7f53e5127bf7d6d6b77cd25aaf1d066434996"),
    "geirhos2019": ("bethgelab/model-vs-human", "79ed7cd1d9ac3a114e71b6638f0a98bdd627316c"),
}
PINNED = {  # (repository, path) -> sha256 of the file at the pinned commit
    ("visinf/beyond-accuracy", "index.html"): "047167b55eeb94f397c46d95be7b3be88b6d5e61aa32c211e7078e15b313ce62",
    ("visinf/beyond-accuracy", "results.xlsx"): "a5559af71796e88c3b884141e9bbbc0e7868898ef517f4be7f31e927d4f72f21",
    ("MaxHeuillet/robust_training", "results_analysis/results_dataset.csv"): (
        "19ebde330ddf665d2df862b4b067a54d36274a1b16e52f762a174a5a771d3aaf"
    ),
}
PAPER_FILES = {  # name in PAPERS -> what it is
    "hesse2025_table12.csv": "Table 12 of Hesse et al. 2025 (arXiv:2503.17110, the TMLR review version), all 326 rows "
    "in the paper's order as a CSV transcription of the PDF (the file tests/data/papers/"
    "hesse2025_table12_quba_326_models.csv is a byte-identical copy)",
    "bitterwolf2023_tables.md": "Tables 3, 4 and 8 of Bitterwolf et al. 2023 (ICML 2023, arXiv:2306.00826) as Markdown "
    "transcriptions of the PDF",
    "bitterwolf2023.txt": "the text of Bitterwolf et al. 2023 (ICML 2023, arXiv:2306.00826) extracted from the PDF",
    "anzaku2024.txt": "the text of Anzaku et al. 2024 (arXiv:2412.18409v1) extracted from the PDF",
}
SHI_SETS = {  # the CSV's dataset name -> our builder name
    "imagenetv2": "imagenet_v2",
    "imagenet_sketch": "imagenet_sketch",
    "imagenet_r": "imagenet_r",
    "imagenet_a": "imagenet_a",
    "objectnet": "objectnet",
}
SHI_FILE = "results/csv_folder/ICML_dict_ALL___ImageNet LCA__{name} Top{k}___{suffix}.csv"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git_show(mirrors: Path, repo: str, commit: str, path: str) -> bytes:
    folder = mirrors / repo.replace("/", "+") / "repo"
    return subprocess.run(
        ["git", "-C", str(folder), "show", f"{commit}:{path}"], capture_output=True, check=True
    ).stdout


def repo_source(mirrors: Path, paper: str, path: str, what: str, check: bool = True) -> tuple[bytes, dict]:
    repo, commit = REPOS[paper]
    data = git_show(mirrors, repo, commit, path)
    digest = sha256(data)
    pinned = PINNED.get((repo, path))
    if check and pinned is not None and pinned != digest:
        raise SystemExit(f"{repo}@{commit[:8]}:{path}: sha256 {digest}, pinned {pinned}")
    return data, {
        "what": what,
        "repository": f"https://github.com/{repo}",
        "commit": commit,
        "path": path,
        "sha256": digest,
    }


def paper_source(papers: Path, name: str) -> tuple[str, dict]:
    data = (papers / name).read_bytes()
    return data.decode("utf-8"), {"what": PAPER_FILES[name], "document": name, "sha256": sha256(data)}


def write_csv(name: str, header: list[str], rows: Iterable[list[str]]) -> tuple[Path, int]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    count = 0
    for row in rows:
        assert len(row) == len(header), (name, row)
        writer.writerow(row)
        count += 1
    path = OUT / name
    path.write_text(buffer.getvalue(), encoding="utf-8")
    return path, count


# ----------------------------------------------------------------------------------- Hesse et al. 2025

HESSE_DIMENSIONS = (
    ("accuracy", "Accuracy", "acc"),
    ("adversarial_robustness", "Adversarial Robustness", "adv_rob"),
    ("c_robustness", "Corruption Robustness", "c_rob"),
    ("ood_robustness", "OOD Robustness", "ood_rob"),
    ("calibration_error", "Calibration Error", "cal_err"),
    ("class_balance", "Class Balance", "class_bal"),
    ("object_focus", "Object Focus", "obj_focus"),
    ("shape_bias", "Shape Bias", "shape_bias"),
    ("params_millions", "Parameters", "params_M"),
)
HESSE_NAME_FIXES = {  # the transcription's garbled names (PDF extraction) -> the name the PDF prints
    "$\\begin{array}{ll} \\rm MViTv2\\text{-}l & \\rm": ("MViTv2-l", "Li"),
    "EfficientFormer-17": ("EfficientFormer-l7", None),
    "SwinV2-1/12to16": ("SwinV2-l/12to16", None),
    "CrossViT-9†(Chen et al., 2021a)": ("CrossViT-9†", None),
    "CrossViT-15†(Chen et al., 2021a)": ("CrossViT-15†", None),
    "CrossViT-18†(Chen et al., 2021a)": ("CrossViT-18†", None),
}


def project_page_rows(page: str) -> list[dict[str, str]]:
    """The 326 models of the project page's interactive table (``const sampleData = [...]``): one dict per model,
    its keys as the page spells them (the parameter count is ``Size`` in 22 entries, ``Parameters`` elsewhere)."""
    body = page[page.index("const sampleData = [") : page.index("setData(sampleData);")]
    rows = []
    for block in re.findall(r"\{(.*?)\n\s*\},", body, re.S):
        row = {}
        for match in re.finditer(r'^\s*("?)([A-Za-z][A-Za-z \-]*)\1:\s*(.*?),?\s*$', block, re.M):
            value = match.group(3).rstrip(",")
            row[match.group(2)] = value[1:-1] if value[:1] in "'\"" else value
        row["Parameters"] = row.pop("Size", None) or row["Parameters"]
        rows.append(row)
    return rows


def rounded_like_table12(dimension: str, value: str) -> float:
    """A page value as Table 12 prints it: four decimals for calibration error, integers for parameters, two
    decimals otherwise (the page's x.xx5 values are decided by the unrounded numbers, see the manifest)."""
    places = {"calibration_error": 4, "params_millions": 0}.get(dimension, 2)
    return round(float(value) + 1e-9, places)


def hesse2025(mirrors: Path, papers: Path) -> dict:
    page_bytes, page_source = repo_source(
        mirrors,
        "hesse2025",
        "index.html",
        "the project page (index.html): the nine dimensions of the 326 "
        "models to four decimals (parameters to one), the values the PDF rounds",
    )
    _, xlsx_source = repo_source(mirrors, "hesse2025", "results.xlsx", "results.xlsx: an empty workbook (no rows)")
    table12_text, table12_source = paper_source(papers, "hesse2025_table12.csv")
    page = project_page_rows(page_bytes.decode("utf-8"))
    table12 = list(csv.DictReader(io.StringIO(table12_text)))
    assert len(page) == len(table12) == 326
    # every Table 12 row is the one page entry whose values, rounded as the PDF prints them, are within one unit
    # of the last printed digit of Table 12's (a bijection; halfway values may differ by that unit, see the manifest)
    units = {"calibration_error": 1.01e-4, "params_millions": 1.01}
    matched: dict[int, int] = {}
    for i, row in enumerate(table12):
        found = [
            j
            for j, entry in enumerate(page)
            if all(
                abs(rounded_like_table12(name, entry[label]) - float(row[column])) <= units.get(name, 1.01e-2)
                for name, label, column in HESSE_DIMENSIONS
            )
        ]
        assert len(found) == 1, (row["model"], found)
        matched[i] = found[0]
    assert len(set(matched.values())) == 326
    header = ["id", "paper_rank", "model", "source", "architecture", "train_data", "paradigm", "quba"]
    header += [name for name, _, _ in HESSE_DIMENSIONS] + ["page_model", "page_title"]
    rows, ids = [], set()
    for i, row in enumerate(table12):
        entry = page[matched[i]]
        model, source = HESSE_NAME_FIXES.get(row["model"], (row["model"], None))
        source = source or row["source"]
        if (model, source) == ("MobileCLIP-B", "LT"):  # the transcription split "MobileCLIP-B (LT)" at its bracket
            model, source = "MobileCLIP-B (LT)", "Vasu"
        ident = f"{model} ({source}, {row['train_data']}, {row['paradigm']})"
        assert ident not in ids, ident
        ids.add(ident)
        values = [entry[label] for _, label, _ in HESSE_DIMENSIONS]
        rows.append(
            [
                ident,
                str(326 - i),
                model,
                source,
                row["arch"],
                row["train_data"],
                row["paradigm"],
                row["quba"],
                *values,
                entry["Model"].strip(),
                entry["Title"].strip(),
            ]
        )
    rows.sort(key=lambda r: int(r[1]))
    path, count = write_csv("hesse2025_table12.csv", header, rows)
    return {
        "name": "hesse2025_table12",
        "paper": "hesse2025",
        "title": "Beyond Accuracy (Hesse et al. 2025), Table 12: the nine quality dimensions and the QUBA score of "
        "all 326 models of the zoo",
        "file": path.name,
        "rows": count,
        "key": "id",
        "units": "fractions (accuracy, robustness, calibration error, class balance, object focus, shape bias), "
        "millions (params_millions), QUBA in standard deviations",
        "percent_columns": [],
        "columns": {
            "id": "unique row name: `model (source, train_data, paradigm)`",
            "paper_rank": "the model's QUBA rank as Table 12 orders it (1 = highest QUBA; Table 12 lists the models "
            "in increasing QUBA, ties in the paper's order)",
            "model": "the model's name as Table 12 prints it",
            "source": "first author of the paper Table 12 cites for the checkpoint",
            "architecture": "CNN, Transformer, ViL (vision-language) or Bcos (Table 12's configuration)",
            "train_data": "training data (Table 12's configuration)",
            "paradigm": "training paradigm: SL, AT, semi-SL, self-SL, self-SL (LP), self-SL (E2E), A1, A2, A3",
            "quba": "the published QUBA score (Table 12, two decimals)",
            **{
                name: f"{label} ({'millions of parameters' if name == 'params_millions' else 'fraction'}; the project "
                "page's value)"
                for name, label, _ in HESSE_DIMENSIONS
            },
            "page_model": "the model's name on the project page (it swaps Steiner et al.'s ViT-l/16 and ViT-b/32)",
            "page_title": "the title of the model's paper, as the project page gives it",
        },
        "sources": [table12_source, page_source, xlsx_source],
        "licence": "Apache-2.0 (visinf/beyond-accuracy LICENSE) for the project page's values; the names, "
        "configurations and QUBA scores are the paper's published results",
        "precision": "The project page gives every dimension to four decimals (parameters to one); Table 12 prints two "
        "(calibration error four, parameters none). This table holds the page's values: rounded as the PDF prints "
        "them they equal Table 12's for all 326 models, except those exactly halfway between two printed values "
        "(63 values such as 0.715 or 25.5 million parameters), which the PDF rounds either way (27 down, 36 up): the "
        "page's values are themselves rounded from more digits. results.xlsx in the repository is an empty workbook. "
        "The QUBA column is the PDF's (two decimals).",
        "notes": [
            "Rows are matched to the page's entries by their values (each Table 12 row has exactly one page entry "
            "within one unit of the last printed digit in every dimension).",
            "Names the PDF extraction garbled are restored (MViTv2-l, EfficientFormer-l7, SwinV2-l/12to16, "
            "MobileCLIP-B (LT), CrossViT-*†).",
            "The digest of the paper flags pipeline-suspect values (ViL calibration and class balance, near-chance "
            "C-robustness of timm/RSB CNNs); they are kept as published.",
        ],
    }


# ----------------------------------------------------------------------------------- Shi et al. 2024


def shi2024(mirrors: Path, papers: Path) -> dict:
    sources, frames = [], {}
    for name in ["imagene", *SHI_SETS]:
        suffix = "imagenet" if name == "imagene" else f"{name}_"
        for k in (1, 5):
            path = SHI_FILE.format(name=name, k=k, suffix=suffix)
            data, source = repo_source(mirrors, "shi2024", path, f"ImageNet LCA vs {name} top-{k} (75 models)")
            sources.append(source)
            rows = list(csv.DictReader(io.StringIO(data.decode("utf-8")), delimiter=";"))
            frames[(name, k)] = {row["models_name_list"]: row for row in rows}
    models = list(frames[("objectnet", 1)])
    assert len(models) == 75
    for table in frames.values():  # the ImageNet columns are the same in every file
        assert set(table) == set(models)
        for model in models:
            for column in ("indicator_axis", "baseline_indicator", "is_VLM"):
                assert table[model][column] == frames[("objectnet", 1)][model][column], (model, column)
    for model in models:
        assert frames[("imagene", 1)][model]["target_axis"] == frames[("imagene", 1)][model]["baseline_indicator"]
    header = ["model", "group", "ood_dataset", "id_top1", "id_top5", "id_lca", "lca_distance", "ood_top1", "ood_top5"]
    rows = []
    for model in models:
        base = frames[("objectnet", 1)][model]
        for name, key in SHI_SETS.items():
            rows.append(
                [
                    model,
                    "VLM" if base["is_VLM"] == "True" else "VM",
                    key,
                    base["baseline_indicator"],
                    frames[("imagene", 5)][model]["target_axis"],
                    base["indicator_axis"],
                    "info",
                    frames[(name, 1)][model]["target_axis"],
                    frames[(name, 5)][model]["target_axis"],
                ]
            )
    path, count = write_csv("shi2024_results.csv", header, rows)
    return {
        "name": "shi2024_results",
        "paper": "shi2024",
        "title": "LCA-on-the-Line (Shi et al. 2024): per model, ImageNet top-1/top-5, the information-based ImageNet "
        "LCA and the top-1/top-5 accuracies on five shifted sets (75 models x 5 sets)",
        "file": path.name,
        "rows": count,
        "key": ["model", "ood_dataset"],
        "units": "fractions (accuracies); id_lca in bits (log2 of the number of leaves under the lowest common "
        "ancestor, averaged over ImageNet-val mistakes)",
        "percent_columns": [],
        "columns": {
            "model": "the model as the authors' code names it (models_name_list)",
            "group": "VLM (vision-language, zero-shot) or VM (vision model): the code's is_VLM",
            "ood_dataset": "the shifted set, by our builder's name: imagenet_v2, imagenet_sketch, imagenet_r, "
            "imagenet_a, objectnet",
            "id_top1": "ImageNet-val top-1 (baseline_indicator)",
            "id_top5": "ImageNet-val top-5 (target_axis of the ImageNet top-5 file)",
            "id_lca": "ImageNet-val LCA distance over mistakes, information-based (indicator_axis)",
            "lca_distance": "which LCA distance id_lca is: `info` (information content) in every row",
            "ood_top1": "top-1 on ood_dataset (target_axis of its Top1 file)",
            "ood_top5": "top-5 on ood_dataset (target_axis of its Top5 file)",
        },
        "sources": sources,
        "licence": "none: the repository has no licence file; the numbers are reference values (published "
        "measurements the tests reproduce the paper's tables from), not redistributed as a dataset",
        "precision": "As released (four to five decimals); the paper prints three.",
        "notes": [
            "The released per-model values use the information-based LCA for every set. The paper uses the "
            "depth-based LCA for ImageNet-Sketch and ImageNet-A (App. E.2): those per-model values are not released "
            "(ICML_dict_result_metric_dict, the code's full result dictionary, is 4 MiB or more and was not "
            "available; coefficient_metric_dict_ICML_dict holds only the information-based statistics).",
            "Several VLM entries are the same weights under two names (CLIP RN50 = openCLIP RN50 openai, ...): "
            "kept as released, as the paper's statistics count them.",
        ],
    }


# ------------------------------------------------------------------------------ Bitterwolf et al. 2023

NINCO_DETECTORS = (
    "msp",
    "maxlogit",
    "energy",
    "kl_matching",
    "mahalanobis",
    "relative_mahalanobis",
    "vim",
    "react_energy",
    "knn",
    "cosine",
    "rcos",
)
NINCO_MODELS = [  # (Table 3's pretraining, Table 3's name) -> (Table 8's name, timm model of Table 8)
    (("21k", "ViT-B-384"), ("ViT-B-384-21k", "vit_base_patch16_384")),
    (("21k", "ViT-B-224"), ("ViT-B-224-21k", "vit_base_patch16_224")),
    (("21k", "Swinv2-B-256"), ("Swinv2-B-256-21k", "swinv2_base_window12to16_192to256_22kft1k")),
    (("21k", "Deit3-B-384"), ("Deit3-B-384-21k", "deit3_base_patch16_384_in21ft1k")),
    (("21k", "Deit3-B-224"), ("Deit3-B-224-21k", "deit3_base_patch16_224_in21ft1k")),
    (("21k", "CnvNxt-B"), ("CnvNxt-B-21k", "convnext_base_in22ft1k")),
    (("21k", "CnvNxt-T"), ("CnvNxt-T-21k", "convnext_tiny_384_in22ft1k")),
    (("21k", "BiT-m"), ("BiT-m", "resnetv2_101x1_bitm")),
    (("21k", "EffNetv2-M"), ("EffNetv2-M-21k", "tf_efficientnetv2_m_in21ft1k")),
    (("none", "ViT-B-384"), ("ViT-B-384", "vit_base_patch16_384.augreg_in1k")),
    (("none", "Swinv2-B-256"), ("Swinv2-B-256", "swinv2_base_window16_256")),
    (("none", "Deit3-B-384"), ("Deit3-B-384", "deit3_base_patch16_384")),
    (("none", "Deit3-B-224"), ("Deit3-B-224", "deit3_base_patch16_224")),
    (("none", "XCiT-M-224"), ("XCiT-M-224", "xcit_medium_24_p16_224")),
    (("none", "XCiT-M-224-d"), ("XCiT-M-224-d", "xcit_medium_24_p16_224_dist")),
    (("none", "CnvNxt-B"), ("CnvNxt-B", "convnext_base")),
    (("none", "BiT-s"), ("BiT-s", "resnetv2_101x1_bitm (BiT-S-R101x1.npz weights)")),
    (("none", "EffNetv2-M"), ("EffNetv2-M", "tf_efficientnetv2_m")),
    (("none", "EffNetb7"), ("EffNetb7", "tf_efficientnet_b7")),
    (("none", "EffNet-B0"), ("EffNet-B0", "efficientnet_b0")),
    (("none", "ResNet50"), ("ResNet50", "resnet50")),
    (("JFT", "EffNetb7-ns"), ("EffNetb7-ns", "tf_efficientnet_b7_ns")),
    (("clip+12k", "ViT-B-384-l2b"), ("ViT-B-384-l2b-12k", "vit_base_patch16_clip_384.laion2b_ft_in12k_in1k")),
    (("clip+12k", "ViT-B-384-oai"), ("ViT-B-384-oai-12k", "vit_base_patch16_clip_384.openai_ft_in12k_in1k")),
    (("clip", "ViT-B-384-l2b"), ("ViT-B-384-l2b", "vit_base_patch16_clip_384.laion2b_ft_in1k")),
    (("clip", "ViT-B-384-oai"), ("ViT-B-384-oai", "vit_base_patch16_clip_384.openai_ft_in1k")),
    (("zero-shot", "CLIP-ViT-L-336"), ("CLIP-ViT-L-336", "OpenAI clip ViT-L/14@336px (zero-shot)")),
    (("zero-shot", "CLIP-ViT-B-224"), ("CLIP-ViT-B-224", "OpenAI clip ViT-B/16 (zero-shot)")),
]
NINCO_HEADER = ["model", "pretraining", "timm_model", "imagenet_top1", *NINCO_DETECTORS]


def _markdown_table(text: str, heading: str) -> list[list[str]]:
    section = text.split(heading, 1)[1].split("\n### ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    cells = [[cell.strip().strip("*").strip() for cell in line.strip("|").split("|")] for line in lines]
    return [row for row in cells[2:] if row and row[0]]


def _ninco_rows(cells: list[list[str]]) -> list[list[str]]:
    assert len(cells) == len(NINCO_MODELS), len(cells)
    rows = []
    for row, ((pre, name), (model, timm)) in zip(cells, NINCO_MODELS, strict=True):
        assert (row[0], row[2]) == (pre, name), (row, pre, name)
        values = [re.sub(r"\s*\(MCM\)$", "", value) for value in row[3:]]
        rows.append([model, pre, timm, row[1], *values])
    return rows


def _table14(text: str) -> list[list[str]]:
    """Table 14 of the paper text: per line ``pre? acc model MSP (value ±delta)...``; the deltas (value − MSP,
    rounded) are checked against the values."""
    section = text.split("Table 14: Mean FPR on subsampled datasets (averaged).", 1)[1].split("Table 15:", 1)[0]
    rows = []
    for line in section.strip().splitlines()[1:]:
        cells = [cell.strip() for cell in line.split("\t")]
        if len(cells) < 5 or not re.fullmatch(r"\d+\.\d", cells[1]):
            continue
        acc, msp, rest = cells[1], cells[3], cells[4:]
        values = []
        for cell in rest:
            found = re.match(r"^(\d+\.\d)(?:\s*([-+−])\s*(\d+))?$", cell.replace("−", "-"))
            values.append(found.group(1) if found else "")
            if found and found.group(2) and msp:
                delta = float(found.group(1)) - float(msp)
                assert abs(abs(delta) - int(found.group(3))) <= 1 and (delta >= -0.5 or found.group(2) == "-"), line
        values = values + [""] * (10 - len(values))
        rows.append([acc, msp if re.fullmatch(r"\d+\.\d", msp) else "", *values])
    zero_shot = rows[-2:]
    for row in zero_shot:  # the zero-shot rows print Cos and MCM only, after dashes
        numbers = [value for value in row[1:] if value]
        row[1:] = [""] * 9 + numbers[-2:]
    return rows


def bitterwolf2023(mirrors: Path, papers: Path) -> list[dict]:
    tables_text, tables_source = paper_source(papers, "bitterwolf2023_tables.md")
    paper_text, paper_text_source = paper_source(papers, "bitterwolf2023.txt")
    table3 = _ninco_rows(_markdown_table(tables_text, "### 7.2 Table 3"))
    table4 = _ninco_rows(_markdown_table(tables_text, "### 7.3 Table 4"))
    raw14 = _table14(paper_text)
    assert len(raw14) == len(NINCO_MODELS), len(raw14)
    table14 = []
    for row, reference in zip(raw14, table3, strict=True):
        assert row[0] == reference[3], (row, reference)  # same rows, same order (ImageNet top-1 as Table 3)
        table14.append([*reference[:4], *row[1:]])
    described = []
    for name, rows, what, metric in (
        ("bitterwolf2023_table3_fpr95", table3, "Table 3: mean FPR@95 on NINCO", "FPR at 95 % TPR (lower is better)"),
        ("bitterwolf2023_table4_auroc", table4, "Table 4: mean AUROC on NINCO", "AUROC (higher is better)"),
        (
            "bitterwolf2023_table14_popular_fpr95",
            table14,
            "Table 14: mean FPR@95 over the 11 cleaned subsampled popular OOD datasets",
            "FPR at 95 % TPR (lower is better)",
        ),
    ):
        path, count = write_csv(f"{name}.csv", NINCO_HEADER, rows)
        described.append(
            {
                "name": name,
                "paper": "bitterwolf2023",
                "title": f"NINCO (Bitterwolf et al. 2023), {what}: 28 models x 11 OOD detectors",
                "file": path.name,
                "rows": count,
                "key": "model",
                "units": "percent, one decimal, as the paper prints them (the leaderboard's NINCO tables hold "
                "fractions: load(..., fractions=True) divides by 100)",
                "percent_columns": ["imagenet_top1", *NINCO_DETECTORS],
                "columns": {
                    "model": "the model as Table 8 names it (Tables 3, 4 and 14 print the name without the "
                    "pretraining suffix, which their `pre` column gives)",
                    "pretraining": "Table 3's pre column: 21k, none, JFT, clip+12k, clip, zero-shot",
                    "timm_model": "the checkpoint (Table 8; timm 0.6.12 names)",
                    "imagenet_top1": "ImageNet-val top-1 (%), the tables' acc column",
                    **{
                        detector: f"{metric} (%) of the {label} detector, mean over the "
                        + ("64 NINCO classes" if "table14" not in name else "11 datasets")
                        for detector, label in zip(
                            NINCO_DETECTORS,
                            (
                                "MSP",
                                "MaxLogit",
                                "Energy",
                                "KL-Matching",
                                "Mahalanobis",
                                "Relative Mahalanobis",
                                "ViM",
                                "Energy+ReAct",
                                "KNN",
                                "Cosine",
                                "RCos (MCM for the zero-shot CLIP rows)",
                            ),
                            strict=True,
                        )
                    },
                },
                "sources": [tables_source] if "table14" not in name else [paper_text_source],
                "licence": "the paper's published results (ICML 2023); the NINCO repository (MIT) does not release "
                "these tables",
                "precision": "As printed: one decimal, percent. The repository's model_outputs/df.pkl (4 MiB or more, "
                "not available) may hold the unrounded values.",
                "notes": [
                    "The zero-shot CLIP rows have only the Cosine and MCM (in the rcos column) detectors.",
                    "Table 8 gives EffNetv2-M 85.0 % top-1, Tables 3-14 print 85.1.",
                ],
            }
        )
    return described


# ----------------------------------------------------------------------------- Heuillet et al. 2025

HEUILLET_PROTOCOLS = {"FFT (50 epochs)": "FFT-50", "FFT (5 epochs)": "FFT-5", "LP (50 epochs)": "LP-50"}


def heuillet2025(mirrors: Path, papers: Path) -> dict:
    data, source = repo_source(
        mirrors,
        "heuillet2025",
        "results_analysis/results_dataset.csv",
        "the authors' measurement table behind "
        "Tables 3 and 8-12 (1,440 rows: 3 protocols x 80 configurations x 6 datasets); added 2025-05-15 "
        "(6efa2188), removed from the default branch after 2025-07-11",
    )
    rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
    header, body = rows[0][1:], [row[1:] for row in rows[1:]]
    assert len(body) == 1440
    index = {name: i for i, name in enumerate(header)}
    out_header = [
        "protocol",
        "backbone",
        "backbone_name",
        "dataset",
        "loss",
        "clean_acc",
        "Linf_acc",
        "L2_acc",
        "L1_acc",
        "common_acc",
        "model_size",
        "model_type",
        "pre_training_strategy",
        "pre_training_dataset",
        "volume_pre_training_data",
    ]
    renamed = {"protocol": "ft_strategy", "loss": "loss_function"}
    out = []
    for row in body:
        values = [row[index[renamed.get(column, column)]] for column in out_header]
        values[0] = HEUILLET_PROTOCOLS[values[0]]
        out.append(values)
    path, count = write_csv("heuillet2025_results.csv", out_header, out)
    return {
        "name": "heuillet2025_results",
        "paper": "heuillet2025",
        "title": "Heuillet et al. 2025: the five accuracies (clean, Linf, L2, L1, common) of every configuration "
        "(backbone x loss) on each of the six datasets, under the three protocols",
        "file": path.name,
        "rows": count,
        "key": ["protocol", "backbone", "loss", "dataset"],
        "units": "fractions (accuracies)",
        "percent_columns": [],
        "columns": {
            "protocol": "FFT-50 (full fine-tuning, 50 epochs: Table 10), FFT-5 (Table 11), LP-50 (linear probing: "
            "Table 12); the CSV's ft_strategy",
            "backbone": "the checkpoint (timm or open_clip name, or robust_resnet50)",
            "backbone_name": "the short name the paper's tables print (two backbones share one)",
            "dataset": "one of the six fine-tuning datasets",
            "loss": "TRADES or Classic AT (loss_function)",
            "clean_acc": "accuracy on the 1,000-image stratified test subset",
            "Linf_acc": "accuracy under AutoAttack Linf",
            "L2_acc": "accuracy under AutoAttack L2",
            "L1_acc": "accuracy under AutoAttack L1",
            "common_acc": "accuracy under the common-corruption portfolio (one corruption per image, severity 3)",
            "model_size": "small, medium or large",
            "model_type": "fully convolutional, fully attention or hybrid",
            "pre_training_strategy": "supervised, self-supervised, ... as the paper's tables",
            "pre_training_dataset": "the pre-training data",
            "volume_pre_training_data": "the number of pre-training images",
        },
        "sources": [source],
        "licence": "none: the repository has no licence file; the numbers are reference values, not redistributed "
        "as a dataset",
        "precision": "As released (float64). The CSV's derived columns sum and geom are left out (sum is recomputed "
        "by the scoring code), its unnamed index column too.",
        "notes": [
            "Sum and Borda of Tables 10-12 are not in this table: the scoring code recomputes them from it "
            "(tests/test_reference_aggregates.py compares them with the published ranks)."
        ],
    }


# ------------------------------------------------------------------------------- Anzaku et al. 2024

ANZAKU_COLUMNS = ["top1_v1", "top1_v2", "real_v1", "real_v2", "asma_v1", "asma_v2", "asma_patchml", "delta_rank"]


def anzaku2024(mirrors: Path, papers: Path) -> dict:
    text, source = paper_source(papers, "anzaku2024.txt")
    pattern = re.compile(r"^(\S+)((?: -?\d+(?:\.\d+)?){7}) ([+\-−]?\d+)$")
    rows, table = [], None
    for line in text.splitlines():
        line = line.strip()
        heading = re.match(r"^Table (\d+):", line)
        if heading:
            table = heading.group(1)
        found = pattern.match(line)
        if found:
            delta = int(found.group(3).replace("−", "-"))
            rows.append([str(len(rows) + 1), table, found.group(1), *found.group(2).split(), str(delta)])
    assert len(rows) == 315 and {row[1] for row in rows} == {str(n) for n in range(4, 11)}, len(rows)
    path, count = write_csv("anzaku2024_tables4_10.csv", ["paper_order", "table", "model", *ANZAKU_COLUMNS], rows)
    return {
        "name": "anzaku2024_tables4_10",
        "paper": "anzaku2024",
        "title": "Anzaku et al. 2024, Tables 4-10: top-1, ReaL accuracy and ASMA of 315 timm checkpoints on "
        "ImageNetV1 (val), ImageNetV2 and PatchML, with the published ΔRank",
        "file": path.name,
        "rows": count,
        "key": "model",
        "units": "percent, two decimals as printed (trailing zeros dropped by the paper); delta_rank in ranks",
        "percent_columns": ANZAKU_COLUMNS[:-1],
        "columns": {
            "paper_order": "the row's position in Tables 4-10, which sort by PatchML ASMA (descending)",
            "table": "which of Tables 4-10 prints the row",
            "model": "the timm checkpoint",
            "top1_v1": "top-1 (%) on ImageNetV1 (ImageNet val), resized to the model's input size, no centre crop",
            "top1_v2": "top-1 (%) on ImageNetV2",
            "real_v1": "ReaL accuracy (%) on ImageNetV1 with the ReaL labels",
            "real_v2": "ReaL-style accuracy (%) on ImageNetV2 with Anzaku et al.'s multi-labels",
            "asma_v1": "ASMA (%) on ImageNetV1 (label counts 1-5)",
            "asma_v2": "ASMA (%) on ImageNetV2",
            "asma_patchml": "ASMA (%) on PatchML, the mean over its five seeds",
            "delta_rank": "published ΔRank = rank(top-1 V1) − rank(PatchML ASMA), positive: better under ASMA",
        },
        "sources": [source],
        "licence": "the paper's published results (arXiv:2412.18409)",
        "precision": "As printed (two decimals).",
        "notes": [
            "Parsed from the paper's text; every row equals the transcription in the project's digest.",
            "The top-1 ranks behind ΔRank cannot be recomputed from the printed top-1 column (see "
            "tests/test_reference_aggregates.py): ΔRank is kept as published.",
            "Table 3 prints volo_d3_448's PatchML ASMA as 69.16, Table 4 as 68.16 (kept).",
        ],
    }


# ------------------------------------------------------------- Geirhos et al. 2019 (model-vs-human)

HUMAN_FILE = "raw-data/cue-conflict/cue-conflict_subject-{:02d}_session_1.csv"
HUMAN_COLUMNS = ["subject", "category", "shape_hits", "texture_hits", "conflict_images", "excluded_images"]


def geirhos2019(mirrors: Path, papers: Path) -> dict:
    from imagenet_suite.scoring.metrics.human_shape_bias import counts_per_category

    sources, out = [], []
    for subject in range(1, 11):
        path = HUMAN_FILE.format(subject)
        data, source = repo_source(mirrors, "geirhos2019", path, f"observer subject-{subject:02d}'s 1,280 trials")
        sources.append(source)
        counts = counts_per_category(csv.DictReader(io.StringIO(data.decode("utf-8"))), source=path)
        for category, count in counts.items():
            out.append([f"subject-{subject:02d}", category, count.shape_hits, count.texture_hits,
                        count.conflict_images, count.excluded_images])  # fmt: skip
    path, count = write_csv("geirhos2019_cue_conflict_humans.csv", HUMAN_COLUMNS, out)
    return {
        "name": "geirhos2019_cue_conflict_humans",
        "paper": "geirhos2019",
        "title": "Geirhos et al. 2019 (texture vs shape), as model-vs-human (Geirhos et al. 2021) releases it: the ten "
        "human observers' shape and texture decisions on the 1,280 cue-conflict images, per shape category",
        "file": path.name,
        "rows": count,
        "key": ["subject", "category"],
        "units": "counts of trials",
        "percent_columns": [],
        "columns": {
            "subject": "the observer (subject-01 ... subject-10)",
            "category": "the shape category of the images (one of the 16)",
            "shape_hits": "trials on cue-conflict images (shape != texture) answered with the shape category",
            "texture_hits": "trials on cue-conflict images answered with the texture category",
            "conflict_images": "trials whose shape and texture differ",
            "excluded_images": "trials whose shape equals the texture (left out, as model-vs-human does)",
        },
        "sources": sources,
        "licence": "model-vs-human: MIT (code); the cue-conflict stimuli and data CC-BY-4.0 (texture-vs-shape's "
        "DATASET_LICENSE, per model-vs-human's licenses/LICENSES_OVERVIEW.md)",
        "precision": "Exact counts, derived from the raw trials with imagenet_suite.scoring.metrics.human_shape_bias "
        "(tests/test_human_shape_bias.py re-derives subject-01's rows from its raw file in tests/data).",
        "notes": [
            "Shape bias = shape_hits / (shape_hits + texture_hits); model-vs-human's matrix plot pools the ten "
            "observers per category (sum the counts, then divide).",
            "Responses that name neither cue (na, or another category) count in neither column.",
        ],
    }


# --------------------------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--papers", type=Path, required=True)
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    tables = [
        hesse2025(args.mirrors, args.papers),
        shi2024(args.mirrors, args.papers),
        *bitterwolf2023(args.mirrors, args.papers),
        heuillet2025(args.mirrors, args.papers),
        anzaku2024(args.mirrors, args.papers),
        geirhos2019(args.mirrors, args.papers),
    ]
    for table in tables:
        table["sha256"] = sha256((OUT / table["file"]).read_bytes())
    released = json.loads((OUT / "manifest.json").read_text(encoding="utf-8"))["versions"]
    released = {entry["version"]: entry["sha256"] for entry in released}  # earlier releases keep their record
    versions = [dict(entry, sha256=released.get(entry["version"])) for entry in VERSIONS]
    versions[-1]["sha256"] = {table["name"]: table["sha256"] for table in tables}
    manifest = {"version": REFERENCE_VERSION, "tables": {t["name"]: t for t in tables}, "versions": versions}
    (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    for table in tables:
        print(f"{table['file']}: {table['rows']} rows, sha256 {table['sha256']}")


if __name__ == "__main__":
    main()
