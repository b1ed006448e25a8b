"""Benchmark helper: run one ``imagenet-suite`` command in this process with its inner stages timed.

    python benchmarks/stage_run.py STAGES.json -- evaluate --model ... --datasets ...

Runs :func:`imagenet_suite.cli.main` on the arguments after ``--`` with a :class:`stage_clock.StageClock`
around the functions of ``evaluate`` a run spends its time in (the same stages as ``bench_sweep.py``, plus
each dataset split's prediction and scoring by key), then writes ``{stage: {"calls", "wall", "cpu"}}`` to
STAGES.json and exits with the command's exit code. Used by ``bench_suite_scale.py``, which measures the
process as a whole (wall, CPU, peak RSS) from outside.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    out, separator, *argv = sys.argv[1:]
    assert separator == "--", "usage: stage_run.py STAGES.json -- COMMAND ..."
    from stage_clock import StageClock, evaluate_stages

    from imagenet_suite import cli

    clock = StageClock()
    for owner, name, stage in evaluate_stages():
        clock.wrap(owner, name, stage)
    try:
        code = cli.main(argv)
    finally:
        record = {name: vars(stage) for name, stage in clock.stages.items()}
        Path(out).write_text(json.dumps(record, indent=1) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
