"""Benchmark helper: the wall and CPU seconds a program spends in chosen functions, each counted once.

:class:`StageClock` wraps functions (module attributes or methods) in place; every call adds its wall time
(``time.perf_counter``) and this process's CPU time (``time.process_time``: every thread) to its stage,
*exclusive* of the time spent in other wrapped functions it calls, so the stages add up to at most the whole.
Calls on other threads than the first caller's are counted inclusive (a stage's worker threads are in its CPU
time anyway). :meth:`StageClock.restore` puts the originals back.

Used by ``bench_sweep.py`` (where a sweep's time goes per model) and ``bench_suite_scale.py``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Stage:
    calls: int = 0
    wall: float = 0.0
    cpu: float = 0.0


@dataclass
class StageClock:
    stages: dict[str, Stage] = field(default_factory=dict)
    _undo: list[Callable[[], None]] = field(default_factory=list)
    _stack: list[list[float]] = field(default_factory=list)  # [wall, cpu] spent in nested stages, per open call
    _thread: int | None = None

    def wrap(self, owner: Any, name: str, stage: str) -> None:
        """Count calls of ``owner.name`` (a module's function or a class's method) as ``stage``."""
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        self.stages.setdefault(stage, Stage())

        @functools.wraps(original)
        def timed(*args, **kwargs):
            if self._thread is None:
                self._thread = threading.get_ident()
            nested = threading.get_ident() == self._thread
            if nested:
                self._stack.append([0.0, 0.0])
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                inner = self._stack.pop() if nested else [0.0, 0.0]
                found = self.stages[stage]
                found.calls += 1
                found.wall += wall - inner[0]
                found.cpu += cpu - inner[1]
                if nested and self._stack:
                    self._stack[-1][0] += wall
                    self._stack[-1][1] += cpu

        setattr(owner, name, timed)
        self._undo.append(lambda: setattr(owner, name, original))

    def reset(self) -> None:
        for stage in self.stages.values():
            stage.calls, stage.wall, stage.cpu = 0, 0.0, 0.0

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()

    def snapshot(self) -> dict[str, Stage]:
        return {name: Stage(s.calls, s.wall, s.cpu) for name, s in self.stages.items()}


def evaluate_stages() -> list[tuple[Any, str, str]]:
    """``(owner, attribute, stage)`` of every timed stage of one ``evaluate`` run (for :meth:`StageClock.wrap`)."""
    from imagenet_suite.inference import evaluate

    return [
        (evaluate, "open_run", "open run folder"),
        (evaluate._Run, "outputs", "predict"),
        (evaluate._Run, "score_target", "score"),
        (evaluate._Run, "resample", "resample"),
        (evaluate, "suite_summary", "summary"),
        (evaluate, "run_benchmark", "benchmark"),
        (evaluate, "bootstrap_summary", "intervals"),
        (evaluate, "write_uncertainty", "uncertainty files"),
        (evaluate, "run_charts", "charts"),
        (evaluate, "write_suite_markdown", "suite.md"),
        (evaluate, "write_run_report", "report.html"),
        (evaluate, "suite_file_bytes", "suite.json"),
        (evaluate, "atomic_write_bytes", "files written"),
    ]
