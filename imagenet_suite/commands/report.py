"""``imagenet-suite report DIR``: rewrite the HTML page of existing results, without computing anything anew.

A run folder of ``evaluate`` (it holds ``suite.json``) → ``DIR/report.html``
(:mod:`imagenet_suite.scoring.presentation.html_run`); a leaderboard folder (``leaderboard_runs.json``, written by
``leaderboard`` and ``evaluate --models``) or a folder of run folders → ``DIR/leaderboard.html``
(:mod:`imagenet_suite.scoring.presentation.html_leaderboard`). Prints the page's path. Anything else is one line
saying what the folder lacks.
"""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report",
        help="rewrite report.html of a run folder, or leaderboard.html of a leaderboard folder or a folder of runs",
    )
    parser.add_argument(
        "folder",
        type=Path,
        metavar="DIR",
        help="a run folder of `evaluate`, a leaderboard folder of `leaderboard`, or a folder of run folders",
    )
    parser.set_defaults(func=run)


def run(args) -> int:
    from imagenet_suite.errors import RunFolderError

    folder: Path = args.folder
    if not folder.is_dir():
        raise RunFolderError(
            f"{folder}: not a folder (expected a run folder, a leaderboard folder or a folder of runs)"
        )
    if (folder / "suite.json").is_file():
        from imagenet_suite.scoring.presentation.html_run import rewrite_run_report

        print(rewrite_run_report(folder))
        return 0
    from imagenet_suite.scoring.presentation.html_leaderboard import rewrite_leaderboard_html

    print(rewrite_leaderboard_html(folder))
    return 0
