"""The real App with every review signal: ``review open`` with detector inputs and an ImageNet reference, driven
by headless Chromium (as in ``tests/test_review_app.py``).

A reviewer picks the look-alike view of the OOD sample two reference images were planted next to (a
``sort_by_similarity`` view of the FiftyOne Brain index): the sample comes first, followed by its
nearest ImageNet images with their classes; the reviewer ticks the OOD sample and applies a
taxonomy decision (``id`` + ``contamination:categorical``) with the App's tag button. A new process
then exports exactly that decision, and a SIGTERM to ``review open`` stops its whole tree (the App server
and mongod). Screenshots are kept in ``test-artifacts/``.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
from pathlib import Path

import psutil
import pytest

from imagenet_suite.dataset.folder import DatasetFolder
from imagenet_suite.review.app import free_port
from imagenet_suite.review.lookalikes import K
from imagenet_suite.review.predictions import imagenet_display_names
from imagenet_suite.scoring.metrics.ood_detector_stats import Embeddings
from tests.fixtures.review_datasets import build_tiny_ood, tiny_ood_ids, write_signal_inputs
from tests.fixtures.review_process import STARTUP, ReviewProcess, kill, review_env
from tests.helpers import build_val
from tests.test_review_app import (
    CHROMEDRIVER,
    CHROMIUM,
    POLL,
    _browser,
    _chips,
    _export_in_a_new_process,
    _pick_view,
    _screenshot,
)

PLANTED_FOR = tiny_ood_ids()[0]  # donuts_000_1000
TAGS = ("id", "contamination:categorical")

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs Debian chromium + chromium-driver (installed by .ci/run)",
)


def test_lookalike_view_and_a_taxonomy_decision_in_the_app(tmp_path, val_layouts):
    folder = build_tiny_ood(tmp_path / "out")
    val = build_val(val_layouts, "folders", tmp_path / "val")
    table = DatasetFolder(val).read_table(None, None, ["id", "label"]).to_pylist()
    reference_ids = [r["id"] for r in table]
    inputs = write_signal_inputs(tmp_path, tiny_ood_ids(), reference_ids)
    planted = reference_ids[5]
    id_h = inputs["id_h"].clone()
    id_h[inputs["id_ids"].index(planted)] = inputs["ood_h"][0] + 1e-4
    Embeddings(id_h.float(), inputs["id_ids"]).save(inputs["id_features"])
    flags = ["--outputs", "--id-outputs", "--features", "--id-features", "--detector-stats"]
    keys = ["outputs", "id_outputs", "features", "id_features", "stats"]
    args = [str(folder), *(x for flag, key in zip(flags, keys) for x in (flag, str(inputs[key])))]
    port = free_port()
    review = ReviewProcess(
        [*args, "--reference", str(val), "--port", str(port), "--reviewer", "alice"],
        review_env(tmp_path),
        tmp_path / "review-open.log",
    )
    driver, processes = None, []
    try:
        url = review.wait_for_url(STARTUP)
        name = review.dataset_name()
        processes = review.tree()
        driver = _browser(Path(tempfile.mkdtemp(dir=tmp_path, prefix="chromium-")))
        classes = _tag_the_lookalike_in_the_app(driver, url)
        names = imagenet_display_names()
        planted_class = names[next(r["label"] for r in table if r["id"] == planted)]
        assert len(classes) == K + 1 and planted_class in classes  # the OOD class + its K nearest ImageNet classes
        decisions = {d.id: d for d in _export_in_a_new_process(name, tmp_path).decisions}
        assert list(decisions) == [PLANTED_FOR]
        assert (decisions[PLANTED_FOR].decision, decisions[PLANTED_FOR].contamination) == ("id", "categorical")
        assert decisions[PLANTED_FOR].reviewer == "alice"
        driver.quit()
        driver = None
        review.process.send_signal(signal.SIGTERM)  # a clean stop: the App server and mongod follow
        review.process.wait(60)
        _, alive = psutil.wait_procs(processes, timeout=60)
        assert not alive, f"left running after SIGTERM: {[p.cmdline()[:4] for p in alive]}"
    finally:
        if driver is not None:
            driver.quit()
        kill([psutil.Process(review.process.pid)] if review.process.poll() is None else [])
        kill([p for p in processes if p.is_running()])
        shutil.rmtree(tmp_path / "fiftyone-db", ignore_errors=True)


def _tag_the_lookalike_in_the_app(driver, url: str) -> list[str]:
    """Pick ``lookalikes: <row id>`` in the view menu, tick its first tile (the OOD sample), apply the taxonomy."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 240, poll_frequency=POLL)
    tiles = lambda d: d.find_elements(By.CSS_SELECTOR, "[data-cy=looker]")  # noqa: E731
    driver.get(url)  # a fresh profile: nothing dismissed; the App opens on a saved view
    slug = "lookalikes-" + PLANTED_FOR.replace("_", "-")
    _pick_view(driver, wait, slug, also=("lookalike-suspects", "most-id-like-knn", "failed-unit-tests"))
    wait.until(lambda d: len(tiles(d)) == K + 1)
    truths = lambda d: [c.removeprefix("truth: ") for c in _chips(d, "card") if c.startswith("truth: ")]  # noqa: E731
    wait.until(lambda d: len(truths(d)) == K + 1)
    classes = truths(driver)
    _screenshot(driver, "review-app-lookalikes.png")
    box = driver.find_elements(By.CSS_SELECTOR, "[data-cy=looker-checkbox-input-]")[0]
    driver.execute_script("arguments[0].click()", box)
    driver.find_element(By.CSS_SELECTOR, "[data-testid=LocalOfferIcon]").click()
    for tag in TAGS:
        field = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-cy=sample-tag-input]"))[0]
        field.send_keys(tag, Keys.ENTER)
    wait.until(lambda d: d.find_elements(By.XPATH, "//*[text()='Apply']"))[0].click()
    wait.until(lambda d: not d.find_elements(By.XPATH, "//*[text()='Apply']"))
    _pick_view(driver, wait, "decided-id")
    wait.until(lambda d: len(tiles(d)) == 1)
    _screenshot(driver, "review-app-lookalike-decided.png")
    return classes
