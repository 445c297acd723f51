"""`li job output RUN_ID`: console tail, artifacts and manifest, each under D7; `--follow` for people."""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import Any

from domain.contract import ContractError, ErrorKind
from entrypoints.verbs._common import run_id_arg, this

FOLLOW_POLL_SECONDS = 0.2


def register(sub: Any) -> None:
    parser = sub.add_parser("output", help="a run's console tail, artifacts and manifest")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("--tail-chars", help="how many characters of the console to return (default 20000)")
    parser.add_argument("--follow", action="store_true", help="stream the console until the run ends")
    parser.add_argument("--raw", action="store_true", help="show the console's raw event stream, not the transcript")
    parser.set_defaults(verb=this(__name__))


def _tail_chars(args: Namespace) -> int:
    from application.reads import TAIL_CHARS_DEFAULT, TAIL_CHARS_MAX, bounded_count

    return bounded_count(args.tail_chars, "--tail-chars", TAIL_CHARS_DEFAULT, TAIL_CHARS_MAX)


def run(args: Namespace) -> dict[str, Any]:
    from entrypoints.container import get_container

    if args.follow:
        raise ContractError(ErrorKind.INVALID_INPUT, "--follow streams text for people and is not available "
                            "under --machine; read `li job output` again or use `li job wait`")
    run_id = run_id_arg(args, args.run_id)
    result: dict[str, Any] = get_container().reads.reads().output(run_id, _tail_chars(args))
    return result


def human(args: Namespace) -> int:
    if args.follow:
        return follow(args)
    return show(run(args), args)


def show(data: dict[str, Any], args: Namespace) -> int:
    """The console text on stdout; anything about it that is not the text goes to stderr."""
    console = data["console"]
    if not console["available"]:
        print(f"li: console unavailable ({console['reason_code']}): {console['detail']}", file=sys.stderr)
        return 5
    text = console["value"]
    if rendered(args, data["run_id"]):
        from domain.transcript import render

        if console["truncated"]:
            text = text[text.find("\n") + 1:]  # the tail's first line is cut: not an event to read
        text = render(text.encode("utf-8", "replace"))
    sys.stdout.write(text)
    sys.stdout.flush()
    if console["truncated"]:
        print(f"li: (the last {len(console['value'])} characters; the log is longer — see --tail-chars)",
              file=sys.stderr)
    return 0


def follow(args: Namespace) -> int:
    """Stream the console as it grows; exit when the run records an end, with the run's exit code."""
    from domain.lifecycle import exit_code_of
    from entrypoints.console_view import ConsoleView
    from entrypoints.container import get_container

    container = get_container()
    reads, clock = container.reads.reads(), container.core.clock()
    run_id = run_id_arg(args, args.run_id)
    reads.observe(run_id, probe_ended=False)  # a bad, missing or unusable run is refused before streaming
    store = container.core.store()
    offset = _start(store, run_id, _tail_chars(args))
    out = ConsoleView(sys.stdout.buffer, rendered=rendered(args, run_id), cut_first_line=offset > 0)
    while True:
        derivation = reads.observe(run_id, probe_ended=False).derivation
        offset = _drain(store, run_id, offset, out)  # after the observation: an end is recorded after the console
        if derivation.terminal or derivation.stopped or derivation.aged_preparing:
            out.close()
        if derivation.terminal:
            return exit_code_of(derivation.status)
        if derivation.stopped:
            print(f"li: {run_id}: the process is gone and no end was recorded (status {derivation.status})",
                  file=sys.stderr)
            return 1
        if derivation.aged_preparing:
            print(f"li: {run_id}: its start was never recorded (an old preparing record); it will not "
                  "produce more output", file=sys.stderr)
            return 1
        clock.sleep(FOLLOW_POLL_SECONDS)


def rendered(args: Namespace, run_id: str) -> bool:
    """A transcript unless --raw, for a run an agent CLI takes part in (per its request.json).

    A request that cannot be read still renders: a line that is no agent event is shown as it is.
    """
    from domain.untrusted import parse_json
    from entrypoints.console_view import rendered_for
    from entrypoints.container import get_container

    if args.raw:
        return False
    try:
        raw = get_container().core.store().read_text(run_id, "request.json")
        request = parse_json(raw.encode("utf-8", "surrogateescape"), "request.json")
        legs = request.get("legs") if isinstance(request, dict) else None
        models = [leg.get("model") for leg in legs if isinstance(leg, dict)] if isinstance(legs, list) else []
        models.append(request.get("synthesize") if isinstance(request, dict) else None)
    except Exception:  # noqa: BLE001 - hostile or missing: the transcript shows what it cannot read as is
        return True
    return rendered_for({m.split("/", 1)[0] for m in models if isinstance(m, str)}, raw=False)


def _start(store: Any, run_id: str, tail_bytes: int) -> int:
    """Begin at about the last `tail_bytes` of the log, on a character boundary."""
    try:
        _, size = store.console_bytes(run_id, 0, 0)
        start = max(0, size - tail_bytes)
        head, _ = store.console_bytes(run_id, start, 4)
    except OSError:  # no console yet, or one that is not a file: start at 0
        return 0
    skip = next((i for i, byte in enumerate(head) if not 0x80 <= byte <= 0xBF), len(head))
    return int(start + skip)


def _drain(store: Any, run_id: str, offset: int, out: Any) -> int:
    """Copy whatever the log gained since `offset`; a log that shrank is read again from the start.

    Read through the store (never through a link the work planted, never blocking on a FIFO).
    """
    while True:
        try:
            chunk, size = store.console_bytes(run_id, offset, 1 << 16)
        except OSError:  # missing or unusable for now; the next poll tries again
            return offset
        if size < offset:
            offset = 0
            continue
        if not chunk:
            break
        out.write(chunk)
        offset += len(chunk)
    out.flush()
    return offset
