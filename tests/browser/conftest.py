"""Browser tests: a real ``streamlit run app.py`` on a free port, driven by Debian's Chromium.

Like datasette's tests, the server's log is printed when a test fails, so a broken page can be
diagnosed from CI output. The tests skip when ``/usr/bin/chromium`` is missing, unless
``LOOPSCOPE_REQUIRE_BROWSER=1`` (set in CI), where a missing browser is a failure.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def _require_browser() -> None:
    missing = []
    if not os.path.exists(CHROMIUM):
        missing.append(CHROMIUM)
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright package")
    if missing:
        message = "browser tests need " + " and ".join(missing)
        if os.environ.get("LOOPSCOPE_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " (LOOPSCOPE_REQUIRE_BROWSER=1)")
        pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
        self.url = url
        self.proc = proc
        self.log = log

    def logs(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"


def start_server(log: Path, env: dict[str, str] | None = None) -> Server:
    """``streamlit run app.py`` on a free port with ``env`` (default: this process's), once it
    answers its health check; its output goes to ``log``."""
    port = free_port()
    env = {**(os.environ if env is None else env), "PYTHONUNBUFFERED": "1"}
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env,
        )
    srv = Server(f"http://127.0.0.1:{port}", proc, log)
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(srv.url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("streamlit did not start:\n" + srv.logs())
        time.sleep(0.3)
    return srv


def stop_server(srv: Server) -> None:
    srv.proc.terminate()
    try:
        srv.proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        srv.proc.kill()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    _require_browser()
    srv = start_server(tmp_path_factory.mktemp("streamlit") / "server.log")
    yield srv
    stop_server(srv)


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """Chromium under Playwright, without starting the default server (a test that needs the
    app on other data starts its own with :func:`start_server`)."""
    _require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def browser(server: Server, chromium: Any) -> Any:
    return chromium


def open_page(browser: Any, server: Server, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh browser window; on failure, a screenshot and the server's log."""
    # The window a support person or a product manager had open when they tried it.
    context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    pg = context.new_page()
    # Generous: these tests check what the page does, not how fast (the benchmarks time it),
    # and a run with every core busy took more than 30 s to open a session from a click.
    pg.set_default_timeout(60_000)
    yield pg
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        shots = Path(os.environ.get("LOOPSCOPE_SCREENSHOT_DIR", "/tmp/loopscope-failures"))
        shots.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(Exception):
            pg.screenshot(path=str(shots / f"{request.node.name}.png"), full_page=True)
        print("\n----- streamlit server log -----\n" + server.logs()[-20000:])
    context.close()


@pytest.fixture
def page(browser: Any, server: Server, request: pytest.FixtureRequest) -> Iterator[Any]:
    yield from open_page(browser, server, request)


@pytest.fixture(scope="module")
def own_samples(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of ``sample_transcripts/``: a test may save labels into it."""
    folder = tmp_path_factory.mktemp("own") / "samples"
    shutil.copytree(ROOT / "sample_transcripts", folder)
    return folder


@pytest.fixture(scope="module")
def own_samples_server(chromium: Any, own_samples: Path,
                       tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The app opened on :func:`own_samples` (and allowed nowhere else)."""
    env = {**os.environ, "LOOPSCOPE_SAMPLES": str(own_samples),
           "LOOPSCOPE_ALLOWED_ROOTS": str(own_samples)}
    srv = start_server(tmp_path_factory.mktemp("streamlit") / "server.log", env)
    yield srv
    stop_server(srv)


@pytest.fixture
def own_samples_page(chromium: Any, own_samples_server: Server,
                     request: pytest.FixtureRequest) -> Iterator[Any]:
    yield from open_page(chromium, own_samples_server, request)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
