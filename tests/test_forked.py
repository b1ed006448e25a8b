"""Work in processes forked from this one (``imagenet_suite.forked``): the results and errors of a call are those
it has in this process, whether or not it is forked; a process that dies mid-call is an error, not a hang."""

from __future__ import annotations

import os
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from operator import truediv

import pytest

from imagenet_suite import forked
from imagenet_suite.errors import RunFolderError
from imagenet_suite.forked import Forks, beside, map_forked


def _pid(_item=None) -> int:
    return os.getpid()


def _refuse(name: str) -> None:
    raise RunFolderError(f"{name}: refused")


@pytest.fixture(params=[1, 2], ids=["one-cpu", "two-cpus"])
def cpus(request, monkeypatch) -> int:
    monkeypatch.setattr(forked, "available_cpus", lambda: request.param)
    return request.param


def test_calls_give_their_results_in_order_in_other_processes_with_two_cpus(cpus):
    with Forks() as forks:
        quotients = [forks.submit(truediv, i, 4) for i in range(5)]
        pids = [forks.submit(_pid) for _ in range(3)]
    assert [found.result() for found in quotients] == [i / 4 for i in range(5)]
    ran_in = {found.result() for found in pids}
    assert ran_in == {os.getpid()} if cpus == 1 else (os.getpid() not in ran_in and 1 <= len(ran_in) <= 2)
    assert map_forked(partial(truediv, 1), [1, 2, 4]) == [1, 0.5, 0.25]
    assert (os.getpid() in map_forked(_pid, range(4))) == (cpus == 1)


def test_a_calls_error_is_raised_by_its_result_with_its_type_and_message(cpus):
    with Forks(limit=1) as forks:
        refused, fine = forks.submit(_refuse, "run_07"), forks.submit(truediv, 1, 2)
    with pytest.raises(RunFolderError, match="^run_07: refused$"):
        refused.result()
    assert fine.result() == 0.5
    with pytest.raises(ZeroDivisionError):
        map_forked(partial(truediv, 1), [1, 0, 2])
    with beside(_refuse, "page") as refusing:
        made = "the block ran"
    assert made == "the block ran"
    with pytest.raises(RunFolderError, match="^page: refused$"):
        refusing.result()


def test_a_process_that_dies_mid_call_is_an_error_not_a_hang(monkeypatch):
    monkeypatch.setattr(forked, "available_cpus", lambda: 2)
    with Forks() as forks:
        died = forks.submit(os._exit, 3)
    with pytest.raises(BrokenProcessPool):
        died.result()
    with pytest.raises(BrokenProcessPool):
        map_forked(os._exit, [3, 4])
    with beside(os._exit, 3) as died:
        pass
    with pytest.raises(ChildProcessError, match="_exit: its process ended without a result"):
        died.result()


def test_at_most_limit_calls_run_at_once(tmp_path, monkeypatch):
    """Each call writes its start and end to one file: with ``limit`` 2, never more than two have started and not
    ended, though six were submitted at once and this process may use four CPUs."""
    monkeypatch.setattr(forked, "available_cpus", lambda: 4)
    with Forks(limit=2) as forks:
        for i in range(6):
            forks.submit(_log_span, tmp_path / "log", i)
    running, most = 0, 0
    for line in (tmp_path / "log").read_text().split():
        running += 1 if line.startswith("start") else -1
        most = max(most, running)
    assert most == 2


def _log_span(path, i: int) -> None:
    import time

    with open(path, "a") as log:
        log.write(f"start{i}\n")
    time.sleep(0.2)  # long enough that the second worker starts a call while the first runs one
    with open(path, "a") as log:
        log.write(f"end{i}\n")


_GIVEN: dict = {}  # what a worker process was given when forked (_given sets it there)


def _given(state: dict) -> None:
    _GIVEN.update(state)


def _from_given(key: str) -> tuple[int, str]:
    return os.getpid(), _GIVEN[key]()


def test_a_workers_initializer_gives_it_state_that_is_not_pickled(cpus):
    """``Forks(initializer=..., initargs=...)``: each worker runs it as it starts, with arguments it has as a fork
    (a lambda, which pickle refuses); where the calls run in this process, it is not run."""
    state = {"name": lambda: "given at the fork"}
    with Forks(initializer=_given, initargs=(state,)) as forks:
        found = [forks.submit(_from_given, "name") for _ in range(3)]
    if cpus == 1:
        with pytest.raises(KeyError):
            found[0].result()
        assert _GIVEN == {}
    else:
        assert {name for _, name in (call.result() for call in found)} == {"given at the fork"}
        assert os.getpid() not in {pid for pid, _ in (call.result() for call in found)} and _GIVEN == {}


def test_mapping_forked_gives_the_results_after_the_block_went_on(cpus):
    with forked.mapping_forked(_pid, range(4)) as results:
        meanwhile = os.getpid()
    assert (meanwhile in results()) == (cpus == 1) and len(results()) == 4
