"""The benchmarks never rot: each `--quick` run answers with ok envelopes and writes its JSON.

Speed is never asserted here (the figures depend on the machine); what is asserted is that every
measured call got an ok envelope, that the JSON holds figures for each, and that bench_cli's
default path measures a regular (non-editable) install, not this checkout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support import REPO, li_bin

BENCH = os.path.join(REPO, "benchmarks")


def quick(script: str, out: str, *extra: str) -> dict:
    done = subprocess.run([sys.executable, os.path.join(BENCH, script), "--quick", "--out", out, *extra],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=240, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out, encoding="utf-8") as handle:
        return json.load(handle)


def test_bench_cli_quick_measures_a_regular_install_of_head_beside_a_refusing_peer(tmp_path: object) -> None:
    peer = os.path.join(str(tmp_path), "peer")
    with open(peer, "w", encoding="utf-8") as handle:
        handle.write('#!/bin/sh\necho "not an envelope"\nexit 3\n')
    os.chmod(peer, 0o755)
    result = quick("bench_cli.py", os.path.join(str(tmp_path), "cli.json"), "--peer", peer)
    head = subprocess.run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert result["commit"] == head
    assert "site-packages" in result["li_module"] and not result["li_module"].startswith(REPO)
    assert set(result["li"]) == {"handshake", "status", "wait", "list", "submit", "help"}
    for key, figures in result["li"].items():
        assert figures["ok"] is True, (key, figures)
        assert figures["samples"] == 1 and figures["ratio_cpu"]["median"] > 0, (key, figures)
    assert result["floor"]["samples"] == 6 and result["floor"]["cpu_ms"]["median"] > 0  # one per call
    # the libraries' own cost, through the install's interpreter; a peer that is no Python has none
    assert set(result["reference"]["li"]) == {"msgspec", "submit_imports"}
    assert all(f["ok"] and f["ratio_cpu"]["median"] > 0 for f in result["reference"]["li"].values())
    assert result["reference"]["peer"] is None
    # a peer whose answers are not ok envelopes is a column of refusals, never a crash
    assert {figures["ok"] for figures in result["peer"].values()} == {False}
    assert "no envelope" in result["peer"]["handshake"]["problem"]


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds supervisors through /proc")
def test_bench_rss_quick_finds_every_supervisor_and_leaves_nothing_running(tmp_path: object) -> None:
    result = quick("bench_rss.py", os.path.join(str(tmp_path), "rss.json"), "--li", li_bin())
    assert result["runs_submitted"] == result["supervisors_found"] == result["runs"] == 3
    assert result["rss"]["count"] == 3 and result["rss"]["median_mb"] > 0
    assert result["killed_by_li"] == 3


def test_bench_scale_quick_times_every_size(tmp_path: object) -> None:
    result = quick("bench_scale.py", os.path.join(str(tmp_path), "scale.json"), "--li", li_bin())
    assert set(result["list"]) == {"10", "50"} and set(result["wait"]) == {"1", "20"}
    for part in ("list", "wait"):
        assert all(figures["ok"] for figures in result[part].values()), result[part]
    assert result["throughput"]["answered_ok"] == result["throughput"]["submits"] == 8


def test_bench_scale_quick_times_every_call_on_a_postgresql_store_beside_the_filesystem_one(tmp_path: object) -> None:
    import psycopg

    from tests.pg import server_dsn

    server = server_dsn()
    result = quick("bench_scale.py", os.path.join(str(tmp_path), "scale.json"), "--li", li_bin(), "--store", server)
    for figures in (result, result["postgresql"]):
        assert set(figures["list"]) == set(figures["status"]) == {"10", "50"} and set(figures["wait"]) == {"1", "20"}
        for part in ("list", "status", "wait"):
            assert all(f["ok"] and f["samples"] == 1 for f in figures[part].values()), figures[part]
        assert figures["throughput"]["answered_ok"] == figures["throughput"]["submits"] == 8
    with psycopg.connect(server, autocommit=True) as conn:  # the scratch database is dropped
        left = conn.execute("SELECT datname FROM pg_database WHERE datname LIKE 'lionrun_bench_%'").fetchall()
    assert left == []


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the wake-up is inotify's")
def test_bench_wakeup_quick_sees_every_end_through_a_watch(tmp_path: object) -> None:
    result = quick("bench_wakeup.py", os.path.join(str(tmp_path), "wakeup.json"), "--li", li_bin())
    assert result["repeat"] == len(result["samples"]) == 2
    assert all(s["all_terminal"] and s["watched"] for s in result["samples"]), result["samples"]
    assert result["median_ms"] > 0


def test_bench_wakeup_quick_on_the_shared_store_sees_every_end_through_its_notify(
        tmp_path: object, pg_dsn: str) -> None:
    result = quick("bench_wakeup.py", os.path.join(str(tmp_path), "wakeup-pg.json"), "--li", li_bin(),
                   "--store", pg_dsn)
    assert result["store"] == "postgresql" and result["repeat"] == len(result["samples"]) == 2
    assert all(s["all_terminal"] and s["watched"] for s in result["samples"]), result["samples"]
    assert all(s["latency_ms"] is not None for s in result["samples"]), result["samples"]


def test_bench_confine_quick_measures_plain_and_confined_starts(tmp_path: object) -> None:
    result = quick("bench_confine.py", os.path.join(str(tmp_path), "confine.json"))
    for figures in result.values():
        assert {"plain", "confined", "added", "probe"} <= set(figures)


def test_bench_store_read_quick_pairs_status_on_both_stores(tmp_path: object, pg_dsn: str) -> None:
    data = quick("bench_store_read.py", os.path.join(str(tmp_path), "store_read.json"), "--store", pg_dsn,
                 "--li", li_bin())
    assert set(data["medians"]) == {"filesystem", "postgresql"} and data["rounds"] == 3
    assert all(len(data["samples"][name]["wall"]) == 3 for name in data["samples"])
    assert data["ratio"]["wall"] > 0 and data["ratio"]["cpu"] > 0
