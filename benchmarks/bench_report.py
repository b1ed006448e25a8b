"""Benchmark: ``leaderboard.html`` of many runs — its size and how fast Chromium opens it (issue 39).

Makes ``--runs`` synthetic runs (default 300): each a suite.json's content as ``evaluate`` writes it, with an
ImageNet-val report, nine other dataset reports, NINCO (two detectors), random QUBA dimensions (all nine, so
every model is ranked and the QUBA figure has a bar per model) and a 95 % interval for every headline number
(so the headline table is as large as with ``--bootstrap``; they are synthetic, with no replicates files, so
the suites stay in memory: no run folder, no paired tests). Then the leaderboard of all of them, as
``imagenet-suite leaderboard`` writes it (Markdown, CSVs, PNGs, HTML; timed), and Debian's headless Chromium (``/usr/bin/chromium`` + ``chromedriver``,
network off) opens the page ``--rounds`` times: the load time is Navigation Timing's ``loadEventEnd``
(parsing, layout of every table and SVG figure, the sorting script run), and a click on the ``value`` header
of the headline table (the largest table) is timed to the end of the sort; a blank page, loaded before it
each round, is the floor. Targets: < 10 MB, < 2 s to load.

    uv run --frozen --all-extras python benchmarks/bench_report.py [--runs 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ("imagenet_a", "imagenet_r", "imagenet_sketch", "imagenetv2", "objectnet", "imagenet_real",
            "stylized16", "edge16", "silhouette16")  # fmt: skip


def report(dataset: str, config: str, rows: list[dict], seed: int) -> dict:
    build = {"folder": f"/data/{dataset}", "builder": dataset, "version": "1.0.0", "config": config,
             "split": "validation", "build_info_sha256": f"{seed:064x}"}  # fmt: skip
    meta = {"dataset": dataset, "version": "1.0.0", "config": config, "split": "validation"}
    return {"meta": meta, "metrics": rows, "provenance": {"dataset": build, "outputs": build, "id_outputs": None}}


def row(metric: str, value: float, variant: str = "") -> dict:
    return {"metric": metric, "variant": variant, "subgroup": "", "value": float(value), "numerator": None,
            "denominator": None}  # fmt: skip


def suite(index: int, rng: np.random.Generator) -> dict:
    from imagenet_suite.scoring.metrics.quba import DIMENSIONS, QUBA_MEAN, QUBA_STD
    from imagenet_suite.scoring.summary.intervals import headline_numbers, value_at
    from imagenet_suite.scoring.summary.suite import suite_summary

    datasets = {"imagenet_val": report("imagenet_val", "default", [row("top1_accuracy", rng.uniform(0.5, 0.9))], 1)}
    for k, name in enumerate(DATASETS):
        datasets[name] = report(name, "default", [row("top1_accuracy", rng.uniform(0.1, 0.8))], k + 2)
    ninco = [row(m, rng.uniform(0.2, 0.9), f"{d}:macro") for d in ("msp", "vim") for m in ("auroc", "fpr95")]
    datasets["ninco/ninco"] = report("ninco", "ninco", ninco, 20)
    summary = suite_summary(datasets, params_millions=float(rng.uniform(5, 300)))
    dims = np.abs(QUBA_MEAN + QUBA_STD * rng.normal(size=9))
    summary["quba"]["dimensions"] = {d: {"value": float(v), "sources": ["synthetic"], "note": ""}
                                     for d, v in zip(DIMENSIONS, dims, strict=True)}  # fmt: skip
    summary["quba"]["missing"] = {}
    ci = {}
    for path, keys in headline_numbers(summary).items():
        value = value_at(summary, keys)
        ci[path] = [value * 0.98, value * 1.02]
    summary["uncertainty"] = {"method": "synthetic", "resamples": 1000, "seed": 0, "ci95": ci, "no_interval": {}}
    return {"format": "imagenet-suite.suite/2", "model": f"timm:synthetic_{index:03d}", "weights": "none (seed 0)",
            "weights_sha256": None, "params": 1000, "imagenet_suite": "0.1.0", "datasets": datasets, "skipped": {},
            "summary": summary}  # fmt: skip


def browser(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1400,1000", f"--user-data-dir={profile}"):  # fmt: skip
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


LOAD = "const n = performance.getEntriesByType('navigation')[0]; return n.loadEventEnd - n.startTime;"
CLICK = """
const th = Array.from(document.querySelectorAll('#headline-numbers thead th')).find(h => h.textContent === 'value');
const start = performance.now(); th.click(); return performance.now() - start;
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="synthetic run folders (default 300)")
    parser.add_argument("--rounds", type=int, default=5, help="page loads (default 5)")
    args = parser.parse_args()
    from imagenet_suite.scoring.presentation.html_leaderboard import write_leaderboard_html
    from imagenet_suite.scoring.summary.leaderboard import leaderboard, write_leaderboard

    print(f"{os.cpu_count()} CPUs, load average {' '.join(f'{v:.1f}' for v in os.getloadavg())} at the start")
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        suites = {entry["model"]: entry for entry in (suite(i, rng) for i in range(args.runs))}
        start = time.perf_counter()
        board = leaderboard(suites)
        write_leaderboard(board, Path(tmp) / "board")
        page = write_leaderboard_html(board, suites, Path(tmp) / "board")
        if os.environ.get("BENCH_REPORT_KEEP"):
            import shutil

            shutil.copy(page, os.environ["BENCH_REPORT_KEEP"])
        elapsed = time.perf_counter() - start
        size = page.stat().st_size
        driver = browser(Path(tmp) / "profile")
        blank = Path(tmp) / "blank.html"
        blank.write_text("<!DOCTYPE html><title>blank</title><p>blank")
        loads, clicks, floor = [], [], []
        try:
            for _ in range(args.rounds):
                driver.get(blank.as_uri())
                floor.append(driver.execute_script(LOAD))
                driver.get(page.as_uri())
                loads.append(driver.execute_script(LOAD))
                clicks.append(driver.execute_script(CLICK))
        finally:
            driver.quit()
    print(f"{args.runs} runs: leaderboard (Markdown, CSVs, PNGs and HTML) in {elapsed:.1f} s")
    print(f"leaderboard.html: {size / 1e6:.2f} MB (target < 10 MB)")
    print(f"Chromium load: median {statistics.median(loads) / 1e3:.2f} s, min {min(loads) / 1e3:.2f} s over "
          f"{args.rounds} loads (target < 2 s)")  # fmt: skip
    print(f"a blank page, the floor: median {statistics.median(floor) / 1e3:.2f} s")
    print(f"sort the headline table by value: median {statistics.median(clicks):.0f} ms")
    return 0 if size < 10e6 and statistics.median(loads) < 2000 else 1


if __name__ == "__main__":
    sys.exit(main())
