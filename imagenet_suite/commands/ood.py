"""``imagenet-suite ood fit-stats --model MODEL --train DIR [--per-class N] --out FILE``: the train-set
statistics of the OOD detectors for one model.

Runs the model over a built train split (``imagenet_train``; another build, e.g. ``imagenet_val``, is
refused unless ``--allow-non-train``; ``--per-class N``: the seeded class-stratified N images per class a
``subset=N`` build holds; the classes the detectors need are checked from the labels before the model
loads), fits every statistic NINCO's
feature-based detectors need — class means, shared and global precisions, the KNN bank, the ReAct clip,
ViM's principal space and α, KL-matching templates — in float64, pass by pass over predict's batches
(never all features in memory), and writes them with their provenance (model, weights sha256,
dataset, rows, seed) and a content hash to a ``.safetensors`` file that ``evaluate --detector-stats``,
``score`` and ``review`` read (each checks the hash; ``evaluate`` and ``review`` refuse it for another model);
prints the file. Logic: :mod:`imagenet_suite.inference.fit_stats`.

``--preset openood_v15`` (OpenOOD v1.5) fits ReAct and KL-matching on the ID validation set: ``--val DIR`` (a
built ``imagenet_val``) with ``--val-split-from DIR`` (a built ``popular_ood`` with config ``openood_id_split``)
predicts OpenOOD's 5,000 val images for them; without ``--val`` they are left out (a note on stderr says so).
"""

from __future__ import annotations

import sys
from pathlib import Path

from .predict import resolve_device, state_weights


def register(subparsers) -> None:
    parser = subparsers.add_parser("ood", help="OOD detection tools: fit-stats (train-set statistics of the detectors)")
    commands = parser.add_subparsers(dest="ood_command", required=True, metavar="SUBCOMMAND")
    fit = commands.add_parser(
        "fit-stats", help="fit a model's OOD detector statistics on a built ImageNet train split (.safetensors)"
    )
    fit.add_argument("--model", required=True, help="as for predict: timm:<name>[.<tag>], torchvision:..., a callable")
    fit.add_argument("--weights", metavar="FILE|none", help="as for predict (default: the tag's pretrained weights)")
    _folder(fit, "--train", "a built imagenet_train folder", required=True)
    _folder(
        fit,
        "--val",
        "a built imagenet_val folder: the ID validation set --preset openood_v15 fits ReAct and KL-matching on",
    )
    fit.add_argument(
        "--val-split-from",
        type=Path,
        metavar="DIR",
        help="a built popular_ood folder (config openood_id_split): only OpenOOD's 5,000 val ids of --val "
        "(default: every row of --val)",
    )
    fit.add_argument("--out", type=Path, required=True, metavar="FILE", help="statistics file to write (.safetensors)")
    fit.add_argument(
        "--per-class", type=int, metavar="N", help="N images per class, a seeded class-stratified draw (default: all)"
    )
    fit.add_argument(
        "--seed", type=int, default=0, help="seed of --per-class, the KNN bank sample and --weights none (default 0)"
    )
    fit.add_argument(
        "--knn-rows",
        type=_rows_or_all,
        default=100_000,
        metavar="N|all",
        help="KNN bank rows, a seeded uniform sample (default 100000); all: every train row (NINCO; N x d x 4 bytes)",
    )
    fit.add_argument("--preset", default="ninco", help="detector hyper-parameters: ninco (default) or openood_v15")
    fit.add_argument("--detectors", nargs="+", metavar="NAME", help="fit only for these detectors (default: all)")
    fit.add_argument(
        "--allow-non-train",
        action="store_true",
        help="fit on a build that is not ImageNet's train split (e.g. imagenet_val: statistics of the evaluation "
        "set), which is otherwise refused; recorded in the file's provenance",
    )
    fit.add_argument("--device", default=None, help="cpu, cuda, cuda:1, ... (default: cuda when available)")
    fit.add_argument("--batch-size", type=int, default=256)
    fit.add_argument("--workers", type=int, default=None, help="DataLoader workers (default: min(4, CPUs))")
    fit.add_argument("--amp", action="store_true", help="autocast (float16 on CUDA, bfloat16 on CPU)")
    fit.add_argument("--no-progress", action="store_true", help="no progress bars")
    fit.set_defaults(func=run_fit_stats)


def _folder(parser, flag: str, help: str, required: bool = False) -> None:
    """``flag DIR`` (a built dataset folder) and the flags of its config and split (``--config``/``--split``
    for ``--train``, ``--val-config``/``--val-split`` for ``--val``)."""
    prefix = "--" if flag == "--train" else f"{flag}-"
    parser.add_argument(flag, type=Path, required=required, metavar="DIR", help=help)
    parser.add_argument(f"{prefix}config", help=f"config of {flag} (default: the only one)")
    parser.add_argument(f"{prefix}split", help=f"split of {flag} (default: the only one)")


def _rows_or_all(value: str) -> int | None:
    """``--knn-rows``: a number of rows, or ``all`` (None); other text is left to the library's check."""
    if value == "all":
        return None
    try:
        return int(value)
    except ValueError:
        return value  # FitStatsOptions names the flag and what it takes


def run_fit_stats(args) -> int:
    from imagenet_suite.dataset.folder import DatasetFolder
    from imagenet_suite.inference import load_model
    from imagenet_suite.inference.fit_stats import (
        FitStatsOptions,
        check_coverage,
        check_stats_file,
        fit_stats,
        left_out,
        library_classes,
        train_rows,
        val_rows,
    )
    from imagenet_suite.inference.predict import PredictOptions

    # every argument first: a run that cannot finish is refused before a model is loaded or data read
    options = FitStatsOptions(
        predict=PredictOptions(
            device=resolve_device(args.device),
            batch_size=args.batch_size,
            workers=args.workers,
            amp=args.amp,
            progress=not args.no_progress,
        ),
        per_class=args.per_class,
        seed=args.seed,
        preset=args.preset,
        knn_rows=args.knn_rows,
        detectors=tuple(args.detectors) if args.detectors else None,
        progress=not args.no_progress,
        val=args.val,
        val_config=args.val_config,
        val_split=args.val_split,
        val_split_from=args.val_split_from,
        allow_non_train=args.allow_non_train,
    )
    check_stats_file(args.out)
    rows = train_rows(DatasetFolder(args.train), args.config, args.split, options)  # a train split, its labels
    check_coverage(rows, library_classes(args.model), options)  # every class a library model has
    val_rows(options)  # the val set and its split agree, before a model is loaded
    missing = left_out(options)
    if missing:
        print(
            f"note: --preset {options.preset} fits {' and '.join(missing)} on the ID validation set: left out; "
            "--val DIR [--val-split-from DIR] adds them",
            file=sys.stderr,
        )
    state_weights(args.model, args.weights, args.seed)
    loaded = load_model(args.model, args.weights, seed=args.seed)
    print(fit_stats(rows, loaded, args.out, options=options))
    return 0
