"""``pb-gym lab`` in a real browser: the tests start ``pb-gym lab --no-browser`` on a free port, drive its
page in headless Chromium (Debian's, through Playwright) and check it against the Python API.

One server and one browser serve every test of this module (module-scoped fixtures): each lesson loads
with no console error and fetches nothing from outside this machine, its screenshot is written; a
slider moved changes the exact figure to the value the Python API gives for the new setting; the
tally of the simulated sessions at the demo seed is the engine's; new seed and reset; and Ctrl-C stops
the server with status 130 and one line.

The screenshots go to a temporary folder, or to ``PB_GYM_LAB_SHOTS`` when it is set (the teacher's
page's pictures: ``PB_GYM_LAB_SHOTS=docs/img/lab pytest tests/experiments/lab/test_lab_browser.py``).

Without Chromium or Playwright the module is skipped, except under CI (``CI`` set), where that fails:
``make test`` installs both (the dev extra, and ``apt-get install chromium`` when it is missing).
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pb_gym import rules as R
from pb_gym.experiments.lab import gamblers_ruin, layout, progression
from pb_gym.experiments.lab.common import DEFAULT_SEED
from pb_gym.experiments.ruin import simulation

from repo_paths import ROOT  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
START_TIMEOUT = 600
"""Seconds the server may take to start: on a machine's first run it compiles the lessons' kernels."""
FILLED = {
    "hand": "#hand-odds table",
    "ruin": "#ruin-p-target",
    "prog": "#prog-p-goal",
    "bold": "#bold-p-optimal",
    "roads": "#roads-p-banker",
    "count": "#count-ev-now",
}
"""Per lesson, an element its exact answer fills in."""


def _missing() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (the dev extra)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    return None


if _missing() is not None:
    if os.environ.get("CI"):
        raise RuntimeError(f"the lab's browser tests cannot run under CI: {_missing()}")
    pytest.skip(_missing() or "", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """``pb-gym lab --no-browser --port PORT`` (the console script's entry point) and its address."""
    port = _free_port()
    command = [sys.executable, "-c", "import pb_gym_cli; pb_gym_cli.console()", "lab", "--no-browser"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen(
        [*command, "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    started = time.monotonic()
    line = process.stdout.readline() if process.stdout else ""
    if f"http://127.0.0.1:{port}/" not in line:
        process.kill()
        raise RuntimeError(
            f"pb-gym lab did not start: {line!r} {process.stderr.read() if process.stderr else ''}"
        )
    print(f"\npb-gym lab started in {time.monotonic() - started:.1f} s")
    yield process, f"http://127.0.0.1:{port}/"
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    folder = Path(os.environ.get("PB_GYM_LAB_SHOTS") or tmp_path_factory.mktemp("lab-shots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class Page:
    """A browser page of the lab that records its console errors and the addresses it fetched."""

    def __init__(self, browser, url: str) -> None:
        self.url = url
        self.page = browser.new_page(viewport={"width": 1600, "height": 1000})
        self.errors: list[str] = []
        self.fetched: list[str] = []
        self.page.on("console", lambda message: message.type == "error" and self.errors.append(message.text))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("request", lambda request: self.fetched.append(request.url))

    def open(self, lesson: str) -> None:
        self.page.goto(f"{self.url}?lesson={lesson}")
        self.wait_text(FILLED[lesson], lambda text: len(text.strip()) > 0)

    def text(self, selector: str) -> str:
        return self.page.inner_text(selector)

    def wait_text(self, selector: str, test, timeout: float = 60.0) -> str:
        """Wait until the text of ``selector`` passes ``test``; return it."""
        end = time.monotonic() + timeout
        while True:
            element = self.page.query_selector(selector)
            text = element.inner_text() if element is not None else ""
            if element is not None and test(text):
                return text
            if time.monotonic() > end:
                raise AssertionError(f"{selector}: {text!r} after {timeout} s")
            self.page.wait_for_timeout(50)

    def close(self) -> None:
        self.page.close()


@pytest.fixture
def page(browser, server):
    opened = Page(browser, server[1])
    yield opened
    opened.close()


def _tally(text: str) -> tuple[int, int]:
    """``(wins, sessions)`` of a tally such as ``0.4300 (430 of 1,000 sessions)``."""
    found = re.search(r"\(([\d,]+) of ([\d,]+) sessions\)", text)
    assert found, text
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def test_every_lesson_loads_with_no_console_error_and_its_screenshot_is_written(page, shots):
    for key, _, _ in layout.LESSONS:
        page.open(key)
        if key in ("ruin", "prog"):  # (the simulation revealed to its end)
            page.wait_text(f"#{key}-tally-text", lambda text: "of 1,000 sessions" in text)
        if key == "bold":
            page.wait_text("#bold-tally-text", lambda text: "(1,000 sessions)" in text)
        if key == "hand":
            page.page.click("#hand-deal-1000")
            page.wait_text("#hand-summary", lambda text: text.startswith("1,001 hands"))
        page.page.wait_for_timeout(800)  # (the last figures drawn)
        path = shots / f"lesson-{key}.png"
        page.page.screenshot(path=str(path), full_page=True)
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000
    assert page.errors == []
    outside = [url for url in page.fetched if not url.startswith(page.url) and not url.startswith("data:")]
    assert outside == []  # no internet: every script, style and font from the lab's own server


def test_a_slider_moved_changes_the_exact_figure_to_the_python_api_s_value(page):
    page.open("ruin")
    assert page.text("#ruin-p-target") == "0.4322"
    start = page.page.query_selector_all("#ruin-range [role=slider]")[0]
    start.focus()
    moved = time.perf_counter()
    for _ in range(3):
        page.page.keyboard.press("ArrowRight")
    expected = gamblers_ruin.ruin_exact("player", 13, 20)
    page.wait_text("#ruin-p-target", lambda text: text == f"{expected['p_target']:.4f}")
    print(f"\nslider to exact figure in the browser: {time.perf_counter() - moved:.3f} s")
    assert page.text("#ruin-p-ruin") == f"{expected['p_ruin']:.4f}"
    assert page.text("#ruin-hands") == f"{expected['hands']:.1f}"
    page.page.click("#ruin-bet label:has-text('Banker')")
    banker = gamblers_ruin.ruin_exact("banker", 13, 20)
    page.wait_text("#ruin-p-target", lambda text: text == f"{banker['p_target']:.4f}")
    assert page.errors == []


def test_the_simulated_tally_at_the_demo_seed_is_the_engine_s(page):
    page.open("ruin")
    text = page.wait_text("#ruin-tally-text", lambda text: "of 1,000 sessions" in text)
    wins, sessions = _tally(text)
    starts, targets = np.full(1000, 10), np.full(1000, 20)
    engine = simulation.simulate_engine(
        R.Rules(), ["player"], starts, targets, DEFAULT_SEED, gamblers_ruin.MAX_HANDS
    )
    assert (wins, sessions) == (int(engine["player"]["success"].sum()), 1000)
    page.open("prog")
    text = page.wait_text("#prog-tally-text", lambda text: "of 1,000 sessions" in text)
    dealt = progression.progression_sessions("martingale", 100, 10, 64, 200, 1000, DEFAULT_SEED)
    assert _tally(text) == (int(dealt["reached"].sum()), 1000)


def test_new_seed_deals_other_sessions_and_reset_brings_the_demo_back(page):
    page.open("ruin")
    page.wait_text("#ruin-tally-text", lambda text: "of 1,000 sessions" in text)
    page.page.click("#new-seed")
    page.page.wait_for_function(f"document.querySelector('#seed').value != '{DEFAULT_SEED}'")
    seed = int(page.page.input_value("#seed"))
    start = page.page.query_selector_all("#ruin-range [role=slider]")[0]
    start.focus()
    page.page.keyboard.press("ArrowLeft")
    page.wait_text(
        "#ruin-p-target", lambda text: text == f"{gamblers_ruin.ruin_exact('player', 9, 20)['p_target']:.4f}"
    )
    wins = int(gamblers_ruin.ruin_sessions("player", 9, 20, 1, 1000, seed)["success"].sum())
    page.wait_text("#ruin-tally-text", lambda text: f"({wins:,} of 1,000 sessions)" in text)
    page.page.click("#reset")
    page.wait_text("#ruin-p-target", lambda text: text == "0.4322")
    assert page.page.input_value("#seed") == str(DEFAULT_SEED)
    assert page.errors == []


def test_ctrl_c_stops_the_server_with_status_130_and_one_line(server):
    """(Last in this module: it stops the module's server.)"""
    process, _ = server
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=30)
    assert process.returncode == 130
    assert err.strip().splitlines()[-1] == "pb-gym: interrupted" and "Traceback" not in err
