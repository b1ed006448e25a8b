"""The real App: ``imagenet-suite review open`` (embedded mongod) driven by headless Chromium, then SIGKILL.

A person's session, end to end, in a fresh browser profile where nothing was dismissed before: the
printed URL (with its session token) opens the App, which trades the token for a cookie and drops it
from the address bar; the first screen is ready to review — the saved view ``contamination_candidates``
selected (the confident OOD samples, most confident first), nothing covering the grid (FiftyOne's
"Explore Enterprise" pop-over is off), each tile's chips labelled (``truth: …``, ``model: …``,
``MSP: …``), a "how to review" line above the App names the tags and the export command; two candidates are tagged ``id``
with the App's tag button and ``decided_id`` shows them; then the review process and its mongod are killed with SIGKILL, and a new process exports
exactly those decisions. The review process printed no deprecation warning. Screenshots are kept
in ``test-artifacts/``.

Before the browser, the same App is probed over HTTP as an attacker would (:func:`probe_as_an_attacker`):
only the printed token URL lets a client in (it sets the cookie); a foreign ``Host`` (DNS rebinding) is
refused; ``/media`` serves the dataset's images and nothing else — not ``/etc/passwd``, not a file beside
the cache, not a symlink in the cache pointing out — even with the cookie; error answers carry no stack
(a ``..`` path, a websocket upgrade). The embedded mongod listens on no TCP port, only on a unix socket in
a 0700 folder; the token is in no command line. (A SIGTERM stopping the whole tree:
``tests/test_review_app_lookalikes.py``.)
"""

from __future__ import annotations

import http.client
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote, urlsplit

import psutil
import pytest

from imagenet_suite.review.app import free_port
from imagenet_suite.review.app_page import BODY_SETTINGS, HEAD_SETTINGS, NOTE_ID
from imagenet_suite.review.decision_table import read_decision_table
from imagenet_suite.review.predictions import imagenet_display_names
from tests.fixtures.review_datasets import CLASSES, build_tiny_ood, tiny_ood_ids, write_outputs
from tests.fixtures.review_process import (
    STARTUP,
    ReviewProcess,
    kill,
    listening_inet,
    mongod_socket_folder,
    review_env,
    token_of,
)
from tests.helpers import REPO_ROOT

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
ARTIFACTS = REPO_ROOT / "test-artifacts"
POLL = 0.1  # s between two checks of a browser wait (selenium's 0.5 s left a quarter second idle in each)
CONFIDENT = {"waffles_002_1002": (931, 0.97), "donuts_001_1001": (500, 0.9), "s_sky_003_1003": (10, 0.6)}

pytestmark = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs Debian chromium + chromium-driver (installed by .ci/run)",
)


def _browser(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def test_review_in_the_app_survives_sigkill(tmp_path):
    folder = build_tiny_ood(tmp_path / "out")
    outputs = write_outputs(tmp_path / "outputs.npz", tiny_ood_ids(), CONFIDENT)
    candidates = sorted(CONFIDENT, key=lambda i: -CONFIDENT[i][1])
    port = free_port()
    review = ReviewProcess(
        [str(folder), "--outputs", str(outputs), "--port", str(port), "--reviewer", "alice"],
        review_env(tmp_path),
        tmp_path / "review-open.log",
    )
    driver, processes = None, []
    try:
        url = review.wait_for_url(STARTUP)
        name = review.dataset_name()
        assert url.startswith(f"http://127.0.0.1:{port}/datasets/{name}?view=contamination-candidates&token=")
        processes = review.tree()
        mongod = next(p for p in processes if p.name() == "mongod")
        _assert_app_on_loopback_and_no_database_port(processes, port)
        _assert_embedded_and_journaled(processes, mongod, tmp_path, token_of(url))
        probe_as_an_attacker(url, port, tmp_path)

        driver = _browser(Path(tempfile.mkdtemp(dir=tmp_path, prefix="chromium-")))
        decided = _review_in_the_app(driver, url, candidates)
        assert decided == candidates[:2]

        os.kill(review.process.pid, signal.SIGKILL)  # the review process and its database die at once
        os.kill(mongod.pid, signal.SIGKILL)
        review.process.wait(30)
        driver.quit()  # the person closes the tab
        driver = None
        _, alive = psutil.wait_procs(processes, timeout=60)
        assert not alive, f"left running after SIGKILL of the review process: {[p.cmdline()[:3] for p in alive]}"

        table = _export_in_a_new_process(name, tmp_path)
        assert {d.id: d.decision for d in table.decisions} == dict.fromkeys(candidates[:2], "id")
        assert all(d.reviewer == "alice" and d.timestamp for d in table.decisions)
        log = (tmp_path / "review-open.log").read_text()
        assert "Warning" not in log and "oldest supported" not in log, log  # mongoengine's, FiftyOne's MongoDB check
    finally:
        if driver is not None:
            driver.quit()
        kill([psutil.Process(review.process.pid)] if review.process.poll() is None else [])
        kill([p for p in processes if p.is_running()])
        shutil.rmtree(tmp_path / "fiftyone-db", ignore_errors=True)  # mongod's ~300 MB of journal files


def _assert_app_on_loopback_and_no_database_port(processes, port: int) -> None:
    """The only listening TCP socket of the whole tree is the App's, on 127.0.0.1:port; mongod has none."""
    listening = [addr for p in processes for addr in listening_inet(p)]
    assert [(a.ip, a.port) for a in listening] == [("127.0.0.1", port)], listening


def _assert_embedded_and_journaled(processes, mongod, tmp: Path, token: str) -> None:
    """FiftyOne's mongod on FIFTYONE_DATABASE_DIR, on a unix socket in a 0700 folder; the App server
    writes with journal=true; the token is in no command line."""
    args = mongod.cmdline()
    assert Path(args[args.index("--dbpath") + 1]) == tmp / "fiftyone-db"
    folder = mongod_socket_folder(mongod)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700 and folder.stat().st_uid == os.getuid()
    server = next(p for p in processes if p.cmdline()[1:3] == ["-m", "imagenet_suite.review.app_server"])
    assert "journal=true" in server.environ()["FIFTYONE_DATABASE_URI"]
    assert not any(token in " ".join(p.cmdline()) for p in processes)


class Probe:
    """HTTP/1.1 requests to the App with exactly the headers given (plus a Host unless one is given)."""

    def __init__(self, port: int):
        self.port = port
        self.cookie: str | None = None

    def get(self, target: str, headers: dict[str, str] | None = None, method: str = "GET", body: bytes | None = None):
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        headers = dict(headers or {})
        if self.cookie and "Cookie" not in headers:
            headers["Cookie"] = self.cookie
        try:
            connection.putrequest(method, target, skip_host="Host" in headers)
            for name, value in headers.items():
                connection.putheader(name, value)
            connection.endheaders(body)
            reply = connection.getresponse()
            return reply.status, dict(reply.getheaders()), reply.read()
        finally:
            connection.close()


def probe_as_an_attacker(url: str, port: int, tmp: Path) -> None:
    """Without the printed URL's token every door is shut (403; a foreign ``Host`` too, with the token or the
    cookie); the printed URL trades it for an HttpOnly, SameSite=Strict cookie that is not the token; with
    the cookie ``/media`` serves the cached images and nothing else (``tmp/cache``: :func:`review_env`)."""
    token, page = token_of(url), urlsplit(url).path
    probe = Probe(port)
    for target, method in [
        ("/", "GET"),
        ("/fiftyone", "GET"),
        ("/graphql", "POST"),
        (page, "GET"),
        (f"/media?filepath={quote('/etc/passwd')}", "GET"),
    ]:
        assert probe.get(target, method=method, body=b"{}" if method == "POST" else None)[0] == 403, target
    assert probe.get(f"/fiftyone?token={token}", {"Host": "attacker.example"})[0] == 403  # DNS rebinding
    assert probe.get(f"/fiftyone?token={token}", {"Host": f"attacker.example:{port}"})[0] == 403

    status, headers, _ = probe.get(urlsplit(url).path + "?" + urlsplit(url).query)  # the printed URL
    assert status == 302 and headers["location"] == f"{page}?view=contamination-candidates"  # token dropped
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and token not in cookie
    probe.cookie = cookie.split(";")[0]
    status, _, html = probe.get(page)
    assert status == 200 and b"<html" in html.lower()
    assert HEAD_SETTINGS in html and BODY_SETTINGS in html  # the review's page: pop-over off, how-to line
    assert probe.get("/fiftyone")[0] == 200
    assert probe.get("/fiftyone", {"Host": "attacker.example", "Cookie": probe.cookie})[0] == 403
    _assert_errors_carry_no_stack(probe)

    images = sorted((tmp / "cache").rglob("*.png"))
    assert images, "review open materialised no image"
    status, _, data = probe.get(f"/media?filepath={quote(str(images[0]))}")
    assert status == 200 and data == images[0].read_bytes()
    secret, escape = tmp / "secret.txt", images[0].parent / "escape.png"
    secret.write_text("not for the App")
    escape.symlink_to(secret)
    for path in [
        "/etc/passwd",
        str(secret),
        str(escape),
        str(images[0].parent / ".." / ".." / ".." / ".." / "secret.txt"),
    ]:
        status, _, data = probe.get(f"/media?filepath={quote(path)}")
        assert status in (403, 404) and b"not for the App" not in data and b"root:" not in data, path
    escape.unlink()


def _assert_errors_carry_no_stack(probe: Probe) -> None:
    """With the cookie: a ``..`` path is refused (400; it was FiftyOne's 500 with the traceback), a file the
    /plugins mount cannot serve shows no stack, and a websocket upgrade is refused (403; it was a 500)."""
    status, _, body = probe.get("/plugins/../..")
    assert status == 400 and b"Traceback" not in body
    status, _, body = probe.get("/plugins/none/index.js")
    assert b"Traceback" not in body and b'File "' not in body, (status, body[:300])
    upgrade = {
        "Connection": "Upgrade",
        "Upgrade": "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    }
    for target in ("/graphql", "/"):
        status, _, body = probe.get(target, upgrade)
        assert status == 403 and b"Traceback" not in body, (target, status, body[:300])


def _review_in_the_app(driver, url: str, candidates: list[str]) -> list[str]:
    """What a person does: look at the first screen, tag the two most confident ``id``, check the views."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(driver, 240, poll_frequency=POLL)
    tiles = lambda d: d.find_elements(By.CSS_SELECTOR, "[data-cy=looker]")  # noqa: E731
    driver.get(url)  # the token buys a cookie; the App's address bar no longer shows it
    assert driver.current_url == url.replace(url[url.index("&token=") :], "")
    _assert_first_screen_ready(driver, wait, tiles, candidates)

    boxes = driver.find_elements(By.CSS_SELECTOR, "[data-cy=looker-checkbox-input-]")
    for box in boxes[:2]:
        driver.execute_script("arguments[0].click()", box)
    driver.find_element(By.CSS_SELECTOR, "[data-testid=LocalOfferIcon]").click()
    field = wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-cy=sample-tag-input]"))[0]
    field.send_keys("id", Keys.ENTER)
    wait.until(lambda d: d.find_elements(By.XPATH, "//*[text()='Apply']"))[0].click()
    wait.until(lambda d: not d.find_elements(By.XPATH, "//*[text()='Apply']"))
    _pick_view(driver, wait, "decided-id")  # the App reads back what its server stored
    wait.until(lambda d: len(tiles(d)) == 2)
    _screenshot(driver, "review-app-decided.png")
    msp = sorted(chip for chip in _chips(driver, "card") if chip.startswith("MSP: "))
    assert msp == sorted(f"MSP: {CONFIDENT[i][1]:.2f}" for i in candidates[:2])
    return candidates[:2]


def _assert_first_screen_ready(driver, wait, tiles, candidates: list[str]) -> None:
    """Nothing dismissed beforehand: the candidates view is selected, most confident first, nothing covers
    the grid, the first tile's chips are labelled, the how-to-review line is shown, the views are listed."""
    from selenium.webdriver.common.by import By

    wait.until(lambda d: len(tiles(d)) == len(candidates))
    wait.until(lambda d: len(_chips(d, "card")) == 3 * len(candidates))
    _screenshot(driver, "review-app-first-screen.png")
    selection = driver.find_element(By.CSS_SELECTOR, "[data-cy=saved-views-selection]")
    assert "contamination_candidates" in selection.get_attribute("textContent")
    assert not driver.find_elements(By.CSS_SELECTOR, ".MuiPopover-root, .MuiBackdrop-root, .MuiModal-root")
    assert not driver.find_elements(By.XPATH, "//*[text()='Accelerate your workflow']")  # the pop-over's title
    assert not any(e.is_displayed() for e in driver.find_elements(By.XPATH, "//*[text()='Explore Enterprise']"))
    first = tiles(driver)[0]
    for x, y in ((0.95, 0.05), (0.5, 0.5), (0.05, 0.95)):  # top right (where the pop-over sat), centre, bottom left
        hit = driver.execute_script(
            "const r = arguments[0].getBoundingClientRect();"
            "const e = document.elementFromPoint(r.left + r.width * arguments[1], r.top + r.height * arguments[2]);"
            "return arguments[0].contains(e);",
            first,
            x,
            y,
        )
        assert hit, f"something covers the first tile at ({x}, {y})"
    top = candidates[0]
    class_index, msp = CONFIDENT[top]
    expected = [f"truth: {CLASSES[top.rsplit('_', 2)[0]][0]}", f"model: {imagenet_display_names()[class_index]}"]
    chips = [e.get_attribute("textContent") for e in first.find_elements(By.CSS_SELECTOR, "[data-cy=tag-card]")]
    assert chips == [*expected, f"MSP: {msp:.2f}"]  # the most confident candidate first, its chips labelled
    truths = [c.removeprefix("truth: ") for c in _chips(driver, "card") if c.startswith("truth: ")]
    assert truths == [CLASSES[c.rsplit("_", 2)[0]][0] for c in candidates]  # every tile: its readable class
    note = driver.find_element(By.ID, NOTE_ID)  # the how-to-review line, above the App: it covers nothing
    name = driver.current_url.split("/datasets/")[1].split("?")[0]
    text = note.get_attribute("textContent")
    assert note.is_displayed() and f"review export {name} --out decisions.csv" in text, text
    header_top = driver.find_element(By.CSS_SELECTOR, "#root").rect["y"]
    assert note.rect["y"] + note.rect["height"] <= header_top + 1  # rects are in fractional pixels
    selection.click()
    for view in ("unreviewed", "by-predicted-imagenet-class", "class-donuts", "decided-id"):
        assert driver.find_elements(By.CSS_SELECTOR, f"[data-cy=saved-views-{view}-selection-option]"), view
    _screenshot(driver, "review-app-view-menu.png")
    option = driver.find_element(By.CSS_SELECTOR, "[data-cy=saved-views-contamination-candidates-selection-option]")
    driver.execute_script("arguments[0].click()", option)  # the selected view again: the menu closes
    wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "[data-cy=saved-views-decided-id-selection-option]"))
    wait.until(lambda d: len(tiles(d)) == len(candidates))


def _chips(driver, field: str) -> list[str]:
    """Texts of the ``field`` chips drawn on the grid's tiles."""
    from selenium.webdriver.common.by import By

    return [e.get_attribute("textContent") for e in driver.find_elements(By.CSS_SELECTOR, f"[data-cy=tag-{field}]")]


def _pick_view(driver, wait, slug: str, also: tuple[str, ...] = ()) -> None:
    """Open the saved-view menu (top left), check the ``also`` views are listed, pick ``slug``."""
    from selenium.webdriver.common.by import By

    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "[data-cy=saved-views-selection]"))[0].click()
    for view in (*also, slug):
        wait.until(lambda d, v=view: d.find_elements(By.CSS_SELECTOR, f"[data-cy=saved-views-{v}-selection-option]"))
    option = driver.find_element(By.CSS_SELECTOR, f"[data-cy=saved-views-{slug}-selection-option]")
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click()", option)  # long menus
    wait.until(lambda d: f"view={slug}" in d.current_url)


def _screenshot(driver, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    driver.save_screenshot(str(ARTIFACTS / name))


def _export_in_a_new_process(name: str, tmp: Path):
    out = tmp / "decisions.csv"
    result = subprocess.run(
        [sys.executable, "-m", "imagenet_suite.cli", "review", "export", name, "--out", str(out)],
        cwd=REPO_ROOT,
        env=review_env(tmp),
        capture_output=True,
        text=True,
        timeout=STARTUP,
    )
    assert result.returncode == 0, result.stderr
    return read_decision_table(out)
