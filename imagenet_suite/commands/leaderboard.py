"""``imagenet-suite leaderboard RUN_DIR... --out DIR``: many models' suite evaluations side by side.

Reads each run folder's ``suite.json`` (``imagenet-suite evaluate``; format and structure checked first)
and writes ``leaderboard.md``, one CSV per table and the plots (:mod:`imagenet_suite.scoring.summary.leaderboard`);
prints the QUBA table. Runs made on different builds of one dataset split are refused unless
``--allow-mixed-builds`` (then ``leaderboard.md`` lists them).
"""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "leaderboard", help="compare evaluated models: QUBA ranks, Sum/Borda/MAC, ΔRank, LCA on the line"
    )
    parser.add_argument(
        "runs", type=Path, nargs="+", metavar="RUN_DIR", help="run folders of `imagenet-suite evaluate`"
    )
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for leaderboard.md, CSVs, PNGs")
    parser.add_argument(
        "--allow-mixed-builds",
        action="store_true",
        help="rank runs made on different builds of the same dataset split (leaderboard.md lists them)",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from imagenet_suite.scoring.summary.leaderboard import leaderboard, load_suites, write_leaderboard

    suites = load_suites(args.runs)  # named in the order of the run folders
    board = leaderboard(
        suites, allow_mixed_builds=args.allow_mixed_builds, folders=dict(zip(suites, args.runs, strict=True))
    )
    written = write_leaderboard(board, args.out)
    print(board.quba.to_string(float_format=lambda v: f"{v:.4g}"))
    print(written[-1])
    return 0
