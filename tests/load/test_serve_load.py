"""`li serve` over 1,000 runs: first page under 1 s, RSS at most 80 MB, CPU near zero idle.

The figures are printed (run with -s) and written to build/serve/figures.json for the closing note.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.browser import Browser, chromium
from tests.serving import Served
from tests.support import REPO, run_li
from tools.synthetic import finished_runs, write_run

RUNS = 1000
IDLE_SECONDS = 10.0
TICKS = os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


@pytest.fixture
def store(li_home: str) -> str:
    ids = finished_runs(li_home, RUNS - 20)
    for n, run_id in enumerate(ids[:: max(1, len(ids) // 40)]):  # a few failed ones, for the "needs you" group
        write_run(li_home, run_id, status="failed", outcome="failed", reason_code="exit_nonzero", exit_code=1,
                  finished_at="2026-01-01T00:00:01+00:00", label=f"team-{n % 5}")
    finished_runs(li_home, 20, start=datetime(2026, 2, 1, tzinfo=UTC))
    return li_home


@pytest.fixture
def served(store: str) -> Iterator[Served]:
    server = Served(store)
    yield server
    server.stop()


def test_a_thousand_runs_first_page_under_a_second_rss_at_most_80_mb_and_idle_cpu_near_zero(
        served: Served, tmp_path: Path) -> None:
    measure(served, tmp_path, "figures.json")


def test_the_same_on_the_postgresql_store(store: str, pg_dsn: str, tmp_path: Path) -> None:
    """The 1,000 runs copied into PostgreSQL (`li store copy`): the board's poll is one query there."""
    env = {"LI_STORE": pg_dsn}
    assert run_li("store", "init", "--machine", home=store, env=env).returncode == 0
    copied = run_li("store", "copy", "--from", store, "--to", pg_dsn, "--machine", home=store, env=env, timeout=600)
    assert json.loads(copied.stdout)["data"]["copied"] == RUNS, copied.stdout[-2000:]
    server = Served(str(tmp_path / "pg-home"), env=env)
    try:
        measure(server, tmp_path, "figures-postgresql.json")
    finally:
        server.stop()


def measure(served: Served, tmp_path: Path, name: str) -> None:
    pid = served.process.pid
    # the first page, as a script fetches it and as a browser renders it
    started = time.monotonic()
    status, _, body = served.request("GET", "/", served.bearer())
    fetched = time.monotonic() - started
    assert status == 200 and body.count(b'class="run"') == RUNS
    chromium()
    browser = Browser(tmp_path)
    try:
        browser.navigate(served.url)
        rendered = browser.evaluate("(() => { const t = performance.getEntriesByType('navigation')[0];"
                                    " return (t.loadEventEnd - t.startTime) / 1000; })()")
        assert browser.evaluate("document.querySelectorAll('li.run').length") == RUNS
        # idle: the page open (its event stream connected), nothing changing
        time.sleep(1.0)
        before, at = cpu_seconds(pid), time.monotonic()
        time.sleep(IDLE_SECONDS)
        idle = (cpu_seconds(pid) - before) / (time.monotonic() - at)
        rss = rss_mb(pid)
    finally:
        browser.close()
    figures = {"runs": RUNS, "start_to_url_s": round(served.started_in, 3), "first_page_fetch_s": round(fetched, 3), "first_page_browser_load_s": round(rendered, 3),
               "rss_mb": round(rss, 1), "idle_cpu_fraction": round(idle, 4), "idle_seconds": IDLE_SECONDS,
               "page_bytes": len(body)}
    os.makedirs(os.path.join(REPO, "build", "serve"), exist_ok=True)
    Path(REPO, "build", "serve", name).write_text(json.dumps(figures, indent=1) + "\n")
    print(figures)
    assert fetched < 1.0 and rendered < 1.0, figures
    assert rss <= 80.0, figures
    assert idle < 0.02, figures  # under 2% of one core
