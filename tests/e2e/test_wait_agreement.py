"""D10.5 through the real `li`: wait, status and list resolve every id through one derivation."""

from __future__ import annotations

from tests.builders import MALFORMED_ID, UNKNOWN_ID, RealBatch
from tests.support import machine

COMPARED = ("run_id", "kind", "label", "status", "terminal", "outcome", "reason_code",
            "possibly_orphaned", "spawn_state", "submitted_at")
STATES = ("completed", "failed", "running", "gone, identity unrecorded", "gone", "aged preparing", "preparing")


def test_wait_status_and_list_say_the_same_of_every_run_in_a_mixed_batch(real_batch: RealBatch) -> None:
    ids = [real_batch.add(state, state) for state in STATES] + [UNKNOWN_ID, MALFORMED_ID]
    home = real_batch.home
    # The wait is the first reader: it reaps the conclusively gone run, and status and list must agree.
    entries = machine("job", "wait", *ids, "--max-wait", "0", home=home).data["runs"]
    rows = {row["run_id"]: row for row in machine("job", "list", "--limit", "1000", home=home).data["runs"]}
    for entry in entries:
        status = machine("job", "status", entry["run_id"], home=home).envelope
        if entry["error"] is not None:
            assert status["ok"] is False and status["error"]["kind"] == entry["error"]["kind"]
            assert entry["run_id"] not in rows
            continue
        assert status["ok"] is True, status
        wanted = {key: entry[key] for key in COMPARED}
        assert {key: status["data"][key] for key in COMPARED} == wanted
        assert {key: rows[entry["run_id"]][key] for key in COMPARED} == wanted
    buckets = {e["run_id"]: (e["terminal"], e["possibly_orphaned"]) for e in entries}
    assert buckets[real_batch.ids["gone"]] == (True, False)
    assert buckets[real_batch.ids["gone, identity unrecorded"]] == (False, True)
