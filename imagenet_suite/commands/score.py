"""``imagenet-suite score DATASET_DIR --outputs FILE``: every metric that applies, as a table and JSON."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:  # scoring (torch) is imported only when the command runs, never at CLI start-up
    from ..scoring.evaluation.options import LcaOptions, OodOptions, ScoreOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score model outputs against a built dataset",
        description=(
            "Join model outputs (a .pt or .npz file with 'ids' and one of 'logits', 'probs', 'log_probs') to a "
            "built dataset by id and compute every metric that applies to it (decided from its columns and "
            "published protocol). Prints the overall numbers; --json writes every row, per-class ones included."
        ),
    )
    parser.add_argument(
        "dataset_dir", metavar="DATASET_DIR", type=Path, help="folder printed by `imagenet-suite build`"
    )
    parser.add_argument("--outputs", required=True, type=Path, metavar="FILE", help="model outputs (.pt or .npz)")
    parser.add_argument("--config", help="dataset config (needed when the folder holds several)")
    parser.add_argument("--split", help="split (needed when the config has several)")
    parser.add_argument(
        "--metrics", nargs="+", metavar="METRIC", help="only these metric families (default: all that apply)"
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the full report as JSON")
    parser.add_argument("--plots", type=Path, metavar="DIR", help="write a reliability diagram / shape-bias plot here")
    parser.add_argument("--device", default="cpu", help="device to score on, e.g. cuda (default: cpu)")
    parser.add_argument(
        "--lca-distance",
        nargs="+",
        dest="lca_distances",
        metavar="D",
        default=["info", "depth_two_sided", "depth_one_sided"],
        help="hierarchy distances for the lca metrics, each reported by name (default: all three)",
    )
    parser.add_argument(
        "--elca-variant",
        default="all",
        choices=["all", "mistakes", "exclude_gt"],
        help="ELCA variant (default: all = mean over all samples)",
    )
    parser.add_argument(
        "--hierarchy",
        type=Path,
        metavar="DIR",
        help="a built wordnet_hierarchy / kmeans_hierarchy folder for the lca metrics "
        "(default: the ImageNet-1k WordNet tree shipped with the package)",
    )
    add_ood_arguments(parser)
    parser.set_defaults(func=run)


def add_ood_arguments(parser: argparse.ArgumentParser) -> None:
    """Options for OOD datasets (NINCO, OOD unit tests, popular OOD sets): the ID side of the comparison."""
    group = parser.add_argument_group("OOD detection (datasets whose protocol has an 'ood' entry)")
    group.add_argument(
        "--id-outputs",
        type=Path,
        metavar="FILE",
        help="the same model's outputs on the ID set (ImageNet val), .pt or .npz",
    )
    group.add_argument(
        "--id-dataset",
        type=Path,
        metavar="DIR",
        help="built ID dataset (imagenet_val): the ID outputs must cover exactly its rows",
    )
    group.add_argument("--id-features", type=Path, metavar="FILE", help="penultimate features of the ID images")
    group.add_argument("--ood-features", type=Path, metavar="FILE", help="penultimate features of the OOD images")
    group.add_argument(
        "--detector-stats", type=Path, metavar="FILE", help="fitted train statistics (DetectorStats.save)"
    )
    group.add_argument(
        "--detectors", nargs="+", metavar="NAME", help="detectors to run (default: all the inputs allow)"
    )
    group.add_argument(
        "--fail-threshold",
        type=float,
        metavar="FPR",
        help="unit-test failure threshold on FPR@95, used by the verdict and marked on the plots "
        "(default: the dataset's, 0.10)",
    )


def run(args: argparse.Namespace) -> int:
    import torch

    from ..scoring.evaluation.report import score
    from ..scoring.metrics.protocols import crop_description
    from ..scoring.outputs import ModelOutputs
    from ..scoring.presentation.plots import write_report_plots

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise ConfigError(f"--device {args.device}: no CUDA device is available")
    check_output_paths(args)  # before any work: a report that cannot be written is refused first
    rows, classes, against = outputs_shape_of(args.dataset_dir, args.config, args.split)
    outputs = ModelOutputs.load(
        args.outputs, device=args.device, num_rows=rows, num_classes=classes, against=against
    )  # shapes checked from the file's headers before its arrays are read
    report = score(
        args.dataset_dir,
        outputs,
        config=args.config,
        split=args.split,
        metrics=args.metrics,
        options=score_options(args),
    )
    crop = crop_description(report.meta["protocol"])
    if crop:
        print(f"note: {crop}", file=sys.stderr)
    summary = report.table
    summary = summary[summary["subgroup"] == ""].drop(columns="subgroup")
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.6f}"))
    if args.json is not None:
        report.to_json(args.json)
        print(f"wrote {args.json}", file=sys.stderr)
    if args.plots is not None:
        for path in write_report_plots(report, args.plots):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def outputs_shape_of(dataset_dir: Path, config: str | None, split: str | None) -> tuple[int, int, str]:
    """The rows and classes the outputs on a dataset split must have, and how to name the split."""
    from ..dataset.folder import DatasetFolder
    from ..scoring.join import expected_num_classes

    folder = DatasetFolder(dataset_dir)
    config = folder.resolve_config(config)
    split = folder.resolve_split(config, split)
    info = folder.config_info(config)
    classes = expected_num_classes(info["features"], folder.protocol(config))
    return int(info["splits"][split]["num_examples"]), classes, f"{folder.name} ({config}, {split})"


# -- arguments -> options: the only place where parsed arguments meet the scoring package ----------------


def score_options(args: argparse.Namespace) -> ScoreOptions:
    """The :class:`ScoreOptions` the parsed arguments describe (defaults for the families without flags)."""
    from ..scoring.evaluation.options import ScoreOptions

    return ScoreOptions(lca=lca_options(args), ood=ood_options(args))


def lca_options(args: argparse.Namespace) -> LcaOptions:
    """``--lca-distance``, ``--elca-variant`` and ``--hierarchy`` as :class:`LcaOptions`."""
    from ..scoring.evaluation.options import LcaOptions

    return LcaOptions(
        distances=tuple(args.lca_distances),
        elca_variant=args.elca_variant,
        hierarchy=str(args.hierarchy) if args.hierarchy else None,
    )


def ood_options(args: argparse.Namespace) -> OodOptions:
    """The OOD flags as :class:`OodOptions`, loading the files they name onto ``--device``.

    Without ``--id-outputs`` only ``--fail-threshold`` is kept (the OOD families then refuse to run),
    and the flags that describe the ID side are refused. ``--id-dataset`` checks that the ID outputs
    cover exactly that dataset's rows.
    """
    from ..scoring.evaluation.options import OodOptions
    from ..scoring.join import join_outputs
    from ..scoring.metrics.ood_detector_stats import DetectorStats, Embeddings
    from ..scoring.outputs import ModelOutputs

    if args.id_outputs is None:
        for flag in ("id_features", "ood_features", "detector_stats", "id_dataset"):
            if getattr(args, flag) is not None:
                raise ConfigError(f"--{flag.replace('_', '-')} needs --id-outputs (the model's outputs on the ID set)")
        return OodOptions(fail_threshold=args.fail_threshold)
    device = getattr(args, "device", "cpu")
    id_outputs = ModelOutputs.load(args.id_outputs, device=device)
    if args.id_dataset is not None:
        join_outputs(args.id_dataset, id_outputs, [], validate=True)  # refuses missing or extra ID rows
    if (args.id_features is None) != (args.ood_features is None):
        raise ConfigError("give both --id-features and --ood-features, or neither")
    return OodOptions(
        id_outputs=id_outputs,
        id_features=Embeddings.load(args.id_features, device) if args.id_features else None,
        ood_features=Embeddings.load(args.ood_features, device) if args.ood_features else None,
        stats=DetectorStats.load(args.detector_stats, device) if args.detector_stats else None,
        detectors=known_detectors(args.detectors),
        fail_threshold=args.fail_threshold,
    )


def known_detectors(names: list[str] | None) -> tuple[str, ...] | None:
    """``--detectors`` as a tuple (None when not given); ConfigError naming unknown detectors."""
    from ..scoring.metrics.ood_detectors import DETECTORS

    unknown = [name for name in names or () if name not in DETECTORS]
    if unknown:
        raise ConfigError(f"--detectors: unknown {unknown}; known: {list(DETECTORS)}")
    return tuple(names) if names else None


def check_output_paths(args: argparse.Namespace) -> None:
    """ConfigError if ``--json`` cannot be written where it points, or ``--plots`` names a file."""
    if args.json is not None:
        parent = args.json.parent
        if args.json.is_dir():
            raise ConfigError(f"--json {args.json}: is a folder; expected the path of a .json file to write")
        if not parent.is_dir():
            raise ConfigError(f"--json {args.json}: the folder {parent} does not exist (create it first)")
        if not os.access(parent, os.W_OK):
            raise ConfigError(f"--json {args.json}: the folder {parent} is not writable")
    if args.plots is not None and args.plots.exists() and not args.plots.is_dir():
        raise ConfigError(f"--plots {args.plots}: is a file; expected a folder (created if missing)")
