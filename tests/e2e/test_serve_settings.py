"""`li serve` lives on: its retry and reply submit with config.toml as it is when a person clicks,
as a fresh `li` call would, not as it was when the page started."""

from __future__ import annotations

import json
import os

import pytest

from lionrun.adapters.fs_store import FsRunStore
from lionrun.domain.contract import ContractError
from lionrun.entrypoints.container import get_container, set_container
from lionrun.entrypoints.serve import app
from tests.support import machine


def write_config(home: str, text: str) -> None:
    with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as handle:
        handle.write(text)


def queue_of(home: str, run_id: str) -> object:
    return json.loads(FsRunStore(home).read_text(run_id, "request.json")).get("queue")


def test_retry_from_the_page_takes_the_config_toml_of_now(li_home: str, monkeypatch: pytest.MonkeyPatch) -> None:
    first = machine("agent", "sh", "true", home=li_home).data["run_id"]  # ended, with no queue
    write_config(li_home, "# nothing yet\n")
    started: list[str] = []
    monkeypatch.setenv("LI_HOME", li_home)
    set_container(None)
    try:
        get_container().core.settings()  # the page started while the file said nothing
        write_config(li_home, '[queues]\nsh = "second"\n')
        target, _ = app.retry(first, {})
        started.append(target.rsplit("/", 1)[-1])
        assert queue_of(li_home, started[-1]) == "second"
        write_config(li_home, "[queues\n")  # a typo: refused, as a fresh call would refuse it
        with pytest.raises(ContractError, match="config.toml"):
            app.retry(first, {})
        write_config(li_home, '[queues]\nsh = "third"\n')  # mended: the next click goes ahead
        target, _ = app.retry(first, {})
        started.append(target.rsplit("/", 1)[-1])
        assert queue_of(li_home, started[-1]) == "third"
    finally:
        set_container(None)
        if started:
            machine("job", "wait", *started, "--max-wait", "30", home=li_home)
