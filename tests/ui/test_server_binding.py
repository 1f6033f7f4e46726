"""``streamlit run app.py`` listens on 127.0.0.1 only unless told otherwise (issue #18)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")
pytest.importorskip("streamlit")

ROOT = Path(__file__).resolve().parents[2]


def test_the_config_binds_loopback() -> None:
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["address"] == "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_plain_streamlit_run_listens_on_loopback_only(tmp_path: Path) -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.port", str(port)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        addresses: set[str] = set()
        deadline = time.monotonic() + 60
        while not addresses and time.monotonic() < deadline:
            assert proc.poll() is None, "streamlit exited"
            time.sleep(0.2)
            try:
                family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(True)]
                addresses = {c.laddr.ip for p in family
                             for c in p.net_connections(kind="inet")
                             if c.status == psutil.CONN_LISTEN and c.laddr.port == port}
            except psutil.Error:
                continue
        assert addresses == {"127.0.0.1"}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
