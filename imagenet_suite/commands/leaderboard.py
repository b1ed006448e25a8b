"""``imagenet-suite leaderboard RUN_DIR... --out DIR``: many models' suite evaluations side by side.

Reads each run folder's ``suite.json`` (``imagenet-suite evaluate``; format and structure checked first)
and writes ``leaderboard.md`` (one section per paper), one CSV per table and the figures
(:mod:`imagenet_suite.scoring.summary.leaderboard`), and ``leaderboard.html``, the same as one self-contained
page (:mod:`imagenet_suite.scoring.presentation.html_leaderboard`); prints the QUBA table. Runs made on different builds of
one dataset split are refused unless ``--allow-mixed-builds`` (then ``leaderboard.md`` lists them).
``--groups FILE`` (a CSV of model, group and optionally setup) gives the groups of Beyond Accuracy's group
comparisons, LCA-on-the-Line's per-group rows and Heuillet et al.'s Table 4 and Figs. 3–4; without it the groups
are those the runs' suite.json record of the models' libraries (family, pretraining); ``--quba-weights`` scores QUBA with other weights than the paper's.
``--reference PAPER`` places the runs among a paper's published models (the reference zoos,
:mod:`imagenet_suite.scoring.summary.reference_rows`); a run whose protocol differs from the paper's is refused
unless ``--allow-protocol-mismatch``.
"""

from __future__ import annotations

import contextlib
import gc
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "leaderboard", help="compare evaluated models: each paper's tables (QUBA, Sum/Borda/MAC, NINCO, LCA, ASMA)"
    )
    parser.add_argument(
        "runs", type=Path, nargs="+", metavar="RUN_DIR", help="run folders of `imagenet-suite evaluate`"
    )
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="folder for leaderboard.md, leaderboard.html, CSVs, PNGs"
    )
    parser.add_argument(
        "--allow-mixed-builds",
        action="store_true",
        help="rank runs made on different builds of the same dataset split (leaderboard.md lists them)",
    )
    parser.add_argument(
        "--groups",
        type=Path,
        metavar="FILE",
        help="CSV with a header row: model,group[,setup] (one row per model and group) for the group comparisons "
        "of Beyond Accuracy (Table 2), the per-group rows of LCA-on-the-Line and Heuillet et al.'s Table 4 and Figs. "
        "3-4 (default: the family and pretraining data suite.json records of each library model)",
    )
    parser.add_argument(
        "--quba-weights",
        metavar="WEIGHTS",
        help="QUBA weights: nine comma-separated numbers (accuracy, adversarial_robustness, c_robustness, "
        "ood_robustness, calibration_error, class_balance, object_focus, shape_bias, params_millions) or "
        "dimension=weight pairs overriding the paper's (e.g. shape_bias=-0.5)",
    )
    parser.add_argument(
        "--reference",
        action="append",
        default=[],
        metavar="PAPER",
        help="place the runs among a paper's published models (repeatable or comma-separated): hesse2025 "
        "(QUBA rank among Table 12's 326, rank interval, P(rank <= 10)), shi2024 (predicted vs measured OOD top-1 "
        "on the line of the 75 published models)",
    )
    parser.add_argument(
        "--lca-baselines",
        action="store_true",
        help="LCA-on-the-Line's AC and Agreement-on-the-Line baselines (Shi et al. 2024, Table 3): reads every run's "
        "ImageNet-val and OOD outputs files (the logits, each checked against the sha256 its run recorded), so it "
        "takes as long as reading them",
    )
    parser.add_argument(
        "--allow-protocol-mismatch",
        action="store_true",
        help="with --reference: place a run whose protocol differs from the paper's (weights tag not recorded, "
        "another attack convention, partial inputs) and say what differs in its row, instead of refusing it",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from imagenet_suite.scoring.metrics.quba import parse_quba_weights
    from imagenet_suite.scoring.summary.groups import read_groups

    if args.reference:
        from imagenet_suite.scoring.summary.reference_rows import check_references

        check_references(args.reference)  # a misspelt paper fails before any run is read
    if args.lca_baselines:  # they read the runs' outputs files: verified against their records, as evaluate does
        from imagenet_suite.inference.run_folder import check_outputs_files

        for run in args.runs:
            check_outputs_files(run)
    weights = parse_quba_weights(args.quba_weights) if args.quba_weights is not None else None
    groups = read_groups(args.groups) if args.groups is not None else None
    with _frozen():  # the modules imported: out of the garbage collector's reach
        suites = _read(args.runs)
        gc.freeze()  # and the runs read
        _write(args, suites, weights, groups)
    return 0


def _read(runs):
    """The runs' suite.json files, read once (the tables and the page share them) with no garbage collection
    while they are read: JSON makes no reference cycles, and a collection would walk every dict read so far.
    Many runs are read in worker processes; meanwhile this process imports the modules of the tables and the
    page (torch, SciPy, matplotlib: seconds), which reading does not need."""
    import importlib

    from imagenet_suite.scoring.summary.leaderboard_runs import loading_suites

    gc.disable()
    try:
        with loading_suites(runs) as loaded:
            for module in ("scoring.summary.leaderboard", "scoring.presentation.html_leaderboard"):
                importlib.import_module(f"imagenet_suite.{module}")
            return loaded()
    finally:
        gc.enable()


@contextlib.contextmanager
def _frozen():
    """Objects alive now kept out of the garbage collector's reach until the block ends (``gc.freeze``): at 300
    runs, hundreds of MiB of dicts no collection need walk again (3 s of CPU); unfrozen afterwards, so that a
    caller running the command in its own process (``cli.main``) keeps a collectable heap."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _write(args, suites, weights, groups) -> None:
    from imagenet_suite.forked import beside
    from imagenet_suite.scoring.presentation.html_leaderboard import write_leaderboard_html
    from imagenet_suite.scoring.summary.leaderboard import leaderboard, write_leaderboard
    from imagenet_suite.scoring.summary.suite_json import PARALLEL_FROM

    board = leaderboard(  # models named in the order of the run folders
        suites,
        folders=dict(zip(suites, args.runs, strict=True)),
        allow_mixed_builds=args.allow_mixed_builds,
        quba_weights=weights,
        groups=groups,
        reference=args.reference,
        allow_protocol_mismatch=args.allow_protocol_mismatch,
        lca_baselines=args.lca_baselines,
    )
    options = {"allow_mixed_builds": args.allow_mixed_builds, "quba_weights": weights,
               "groups": str(args.groups.resolve()) if args.groups is not None else None}  # fmt: skip
    many = len(suites) >= PARALLEL_FROM  # fewer: too little to write to be worth another process
    with beside(write_leaderboard, board, args.out, forking=many) as markdown:  # the Markdown, CSVs, PNGs
        write_leaderboard_html(board, suites, args.out, args.runs, options)
    written = markdown.result()
    print(board.quba.to_string(float_format=lambda v: f"{v:.4g}", na_rep="—"))
    for paper, section in board.reference.items():
        for name, frame in section.shown.items():
            if "source" in frame.columns:  # a table of published and run rows: the runs' rows
                frame = frame[frame["source"] == "this run"].drop(columns=["source", "weights"])
            print(f"\namong the published models of {paper} ({name}):")
            print(frame.to_string(float_format=lambda v: f"{v:.4g}"))
    print(written[-1])
