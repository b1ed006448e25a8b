"""A leaderboard of many runs uses two CPUs (issue 38: 300 runs at the real image counts): the suite.json files are
read in forked worker processes, each ranking's tests (and the uncertainty files they read) in worker processes, and
the Markdown, CSVs and PNGs are written in a forked process while the HTML page is. What it reads and every file it
writes are the same as with one CPU, and so is the one-line error of a bad file: the first in the order the files
are used."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from imagenet_suite import cli, forked
from imagenet_suite.scoring.presentation import html
from imagenet_suite.scoring.summary import leaderboard as leaderboard_module
from imagenet_suite.scoring.summary import suite_json, uncertainty_files
from imagenet_suite.scoring.summary.leaderboard_runs import LEADERBOARD_HOLDING
from imagenet_suite.scoring.summary.suite_json import PARALLEL_FROM, read_suites
from tests.helpers import one_line
from tests.test_leaderboard_significance import _hits, write_bootstrapped_run
from tests.test_read_runs import leaderboard

RUNS = PARALLEL_FROM + 2


def _write(root: Path, i: int) -> Path:
    """Run ``i``: wrong on other images of ImageNet val than the others."""
    return write_bootstrapped_run(root, f"timm:m{i:02d}", _hits(list(range(i % 5, 60, 3 + i))), _hits([i % 30], 30))


@pytest.fixture(scope="module")
def written_runs(tmp_path_factory) -> Path:
    """More runs than :data:`PARALLEL_FROM`, bootstrapped, written once."""
    root = tmp_path_factory.mktemp("runs")
    for i in range(RUNS):
        _write(root, i)
    return root


@pytest.fixture
def many_runs(written_runs, tmp_path) -> list[Path]:
    """A copy of :func:`written_runs` (a test may change a run), in the runs' order."""
    root = shutil.copytree(written_runs, tmp_path / "runs")
    return sorted(root.iterdir())


def test_suite_json_files_read_in_worker_processes_are_those_read_one_by_one(many_runs, monkeypatch):
    alone = read_suites(many_runs, LEADERBOARD_HOLDING, processes=1)
    pids = []
    read = suite_json.read_suite

    def reading(path, holding):  # the workers are forked: they run this too, and say which process they are
        return {**read(path, holding), "read_by": os.getpid()}

    monkeypatch.setattr(suite_json, "read_suite", reading)
    together = read_suites(many_runs, LEADERBOARD_HOLDING, processes=2)
    pids = {suite.pop("read_by") for suite in together}
    assert os.getpid() not in pids  # read in the workers (one of which may take every file)
    assert len(pids) <= 2
    assert together == alone
    first, last = (suite["datasets"]["imagenet_val"]["metrics"][0] for suite in (together[0], together[-1]))
    assert first["metric"] == last["metric"] and first["metric"] is last["metric"]  # one string for all runs


def test_the_first_bad_suite_json_in_the_runs_order_is_the_one_named(tmp_path, many_runs, capsys, monkeypatch):
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    for position, value in ((3, 1.5), (RUNS - 2, -1)):
        path = many_runs[position] / "suite.json"
        suite = json.loads(path.read_text())
        suite["datasets"]["imagenet_val"]["metrics"][0]["value"] = value
        path.write_text(json.dumps(suite))
    message = one_line(capsys, leaderboard(tmp_path, *many_runs))
    assert f"error: {many_runs[3] / 'suite.json'}: " in message and "metrics[0].value: expected a number" in message
    assert [run.name for run in many_runs if str(run) in message] == [many_runs[3].name]


def test_reading_the_runs_imports_neither_torch_nor_matplotlib():
    """The command reads the runs in worker processes while it imports the tables' and the page's modules (torch,
    SciPy, matplotlib: seconds): what reading needs is none of them (in a fresh interpreter, which has only what
    it imported)."""
    code = (
        "import sys, imagenet_suite.scoring.summary.leaderboard_runs, imagenet_suite.commands.leaderboard;"
        "print(sorted({'torch', 'scipy', 'matplotlib'} & {name.split('.')[0] for name in sys.modules}))"
    )
    found = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert found.stdout == "[]\n"


def _cpus(monkeypatch, cpus: int) -> None:
    monkeypatch.setattr(forked, "available_cpus", lambda cpus=cpus: cpus)


def _record_reads(monkeypatch, log: Path) -> None:
    """Each uncertainty file read from now on (suite.json checks its sha256 first) is a line of ``log``: the
    process that read it and its path (the reading processes are forks: they run this too)."""
    checked = uncertainty_files._checked_bytes

    def recorded(run_dir, entry, what):
        with open(log, "a") as lines:
            lines.write(f"{os.getpid()} {run_dir / entry['path']}\n")
        return checked(run_dir, entry, what)

    monkeypatch.setattr(uncertainty_files, "_checked_bytes", recorded)


def _reads(log: Path) -> list[tuple[int, Path]]:
    found = [line.split(" ", 1) for line in log.read_text().splitlines()]
    log.unlink()
    return [(int(pid), Path(path)) for pid, path in found]


def test_the_leaderboard_on_two_cpus_writes_the_files_it_writes_on_one(tmp_path, many_runs, monkeypatch):
    boards, writers, drawers = {}, {}, {}
    write, svg_of = leaderboard_module.write_leaderboard, html._svg_of

    def writing(board, folder):  # in the forked process (which has it, as a fork): says which process it is
        (tmp_path / f"{Path(folder).name}.pid").write_text(str(os.getpid()))
        return write(board, folder)

    def drawing(name, draw, args, kwargs):  # each of leaderboard.html's figures, the same way
        with open(tmp_path / "drawers", "a") as drawers_file:
            drawers_file.write(f"{os.getpid()}\n")
        return svg_of(name, draw, args, kwargs)

    monkeypatch.setattr(leaderboard_module, "write_leaderboard", writing)
    monkeypatch.setattr(html, "_svg_of", drawing)
    _record_reads(monkeypatch, tmp_path / "reads")
    readers = {}
    for cpus in (1, 2):
        _cpus(monkeypatch, cpus)
        out = tmp_path / f"board-{cpus}"
        assert cli.main(["leaderboard", *map(str, many_runs), "--out", str(out)]) == 0
        boards[cpus] = {path.name: path.read_bytes() for path in sorted(out.iterdir())}
        writers[cpus] = int((tmp_path / f"{out.name}.pid").read_text())
        drawers[cpus] = (tmp_path / "drawers").read_text().split()
        (tmp_path / "drawers").unlink()
        readers[cpus] = _reads(tmp_path / "reads")
    assert boards[1] == boards[2]
    files = {path for _, path in readers[1]}
    assert {path.name for path in files} == {"replicates.parquet", "imagenet_val.parquet"}
    assert len(files) == 2 * RUNS and {path for _, path in readers[2]} == files
    assert {pid for pid, _ in readers[1]} == {os.getpid()}
    assert os.getpid() not in {pid for pid, _ in readers[2]}  # every one read in a worker
    assert b"McNemar (exact)" in boards[2]["leaderboard_significance.csv"] and "leaderboard.md" in boards[2]
    assert boards[2]["leaderboard.html"].count(b"<svg") == len(drawers[2]) >= 1
    assert writers[1] == os.getpid() != writers[2]
    assert set(drawers[1]) == {str(os.getpid())} and len(drawers[1]) == len(drawers[2])
    assert str(os.getpid()) not in drawers[2]
    few = many_runs[: PARALLEL_FROM - 1]  # too little work to be worth a process: all in this one
    assert cli.main(["leaderboard", *map(str, few), "--out", str(tmp_path / "few")]) == 0
    assert int((tmp_path / "few.pid").read_text()) == os.getpid()
    assert set((tmp_path / "drawers").read_text().split()) == {str(os.getpid())}


@pytest.mark.parametrize("cpus", [1, 2])
def test_a_markdown_file_that_cannot_be_written_is_one_line_and_the_page_is_written(
    tmp_path, many_runs, monkeypatch, capsys, cpus
):
    _cpus(monkeypatch, cpus)
    out = tmp_path / "board"
    (out / "leaderboard_accuracies.csv").mkdir(parents=True)
    message = one_line(capsys, ["leaderboard", *map(str, many_runs), "--out", str(out)])
    assert re.search(rf"error: .*{re.escape(str(out / 'leaderboard_accuracies.csv'))}: Is a directory$", message)
    assert (out / "leaderboard.html").is_file() and not (out / "leaderboard.md").exists()


def test_of_two_bad_files_the_one_met_first_in_the_rankings_order_is_named(tmp_path, many_runs, monkeypatch, capsys):
    """With two CPUs the rankings' tests run in worker processes, several at once. A changed replicates file,
    which the first ranking (ImageNet multi-label's accuracy: paired bootstrap tests) reads, is the error named
    though the second ranking (ImageNet val's: McNemar) meets a changed file too, as on one CPU; alone, the
    second is named."""
    replicates = many_runs[3] / "uncertainty" / "replicates.parquet"
    correct = many_runs[5] / "uncertainty" / "imagenet_val.parquet"
    messages = {}
    for damaged in (correct, replicates):  # the second time, both are changed
        damaged.write_bytes(damaged.read_bytes() + b"\0")
        for cpus in (1, 2):
            _cpus(monkeypatch, cpus)
            messages[damaged.name, cpus] = one_line(capsys, leaderboard(tmp_path, *many_runs))
    for path in (correct, replicates):
        assert messages[path.name, 1] == messages[path.name, 2]
        assert re.search(rf"error: {re.escape(str(path))}: not the file suite.json names", messages[path.name, 2])
