"""`li job output RUN_ID`: console tail, artifacts and manifest, each under D7; `--follow` for people."""

from __future__ import annotations

import sys
from argparse import Namespace
from typing import TYPE_CHECKING, Any

from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.entrypoints.verbs._common import run_id_arg, this

if TYPE_CHECKING:
    from lionrun.application.follow import FollowEnd


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("output", help="a run's console tail, artifacts and manifest")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.add_argument("--tail-chars", help="how many characters of the console to return (default 20000)")
    parser.add_argument("--lines", metavar="N", help="the console's last N lines (read from at most its last "
                        "1000000 characters)")
    parser.add_argument("--follow", action="store_true", help="stream the console until the run ends (from "
                        "its start, or its last MiB)")
    parser.add_argument("--artifact", metavar="NAME", help="print the artifact NAME (as the listing names it) "
                        "instead of the console")
    parser.add_argument("--raw", action="store_true", help="show the console's raw event stream, not the transcript")
    parser.set_defaults(verb=this(__name__))


def _tail_chars(args: Namespace) -> int:
    from lionrun.application.reads import TAIL_CHARS_DEFAULT, TAIL_CHARS_MAX, bounded_count

    return bounded_count(args.tail_chars, "--tail-chars", TAIL_CHARS_DEFAULT, TAIL_CHARS_MAX)


FOLLOW_FROM_MAX = 1 << 20  # `--follow` starts at the console's start, or at a line within its last MiB
ARTIFACT_MAX = 16 << 20  # `--artifact` prints a file of at most 16 MiB


def _lines(args: Namespace) -> int | None:
    from lionrun.application.reads import TAIL_CHARS_MAX, bounded_count

    if getattr(args, "lines", None) is None:
        return None
    if args.tail_chars is not None:
        raise ContractError(ErrorKind.INVALID_INPUT, "give either --lines or --tail-chars, not both")
    return bounded_count(args.lines, "--lines", 0, TAIL_CHARS_MAX)


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.entrypoints.container import get_container

    if args.follow:
        raise ContractError(ErrorKind.INVALID_INPUT, "--follow streams text for people and is not available "
                            "under --machine; read `li job output` again or use `li job wait`")
    if getattr(args, "artifact", None) is not None and not getattr(args, "for_person", False):
        raise ContractError(ErrorKind.INVALID_INPUT, "--artifact prints a file for people and is not available "
                            "under --machine; read the path the artifacts listing gives")
    run_id = run_id_arg(args, args.run_id)
    lines = _lines(args)
    if lines is None:
        result: dict[str, Any] = get_container().reads.reads().output(run_id, _tail_chars(args))
        return result
    from lionrun.application.reads import TAIL_CHARS_MAX
    from lionrun.domain.console import last_lines

    result = get_container().reads.reads().output(run_id, TAIL_CHARS_MAX)
    console = result["console"]
    if console["available"]:
        value, cut = last_lines(console["value"], lines, console["truncated"])
        result["console"] = {**console, "value": value, "truncated": console["truncated"] or cut}
    return result


def human(args: Namespace) -> int:
    from lionrun.application.reads import TAIL_CHARS_MAX
    from lionrun.entrypoints.verbs._common import clamp_note

    clamp_note(args.tail_chars, "--tail-chars", TAIL_CHARS_MAX)
    clamp_note(getattr(args, "lines", None), "--lines", TAIL_CHARS_MAX)
    if args.follow:
        if getattr(args, "artifact", None) is not None:
            raise ContractError(ErrorKind.INVALID_INPUT, "--artifact prints a file; it cannot be followed")
        return follow(args)
    if getattr(args, "artifact", None) is not None:
        return show_artifact(args)
    return show(run(args), args)


def show_artifact(args: Namespace) -> int:
    """The artifact's bytes on stdout (`artifact_body`)."""
    body = artifact_body(run(args), args.artifact, ARTIFACT_MAX)
    sys.stdout.flush()
    sys.stdout.buffer.write(body)
    sys.stdout.buffer.flush()
    return 0


def artifact_body(data: dict[str, Any], name: str, limit: int) -> bytes:
    """The bytes of the artifact `name` of the run `data` (`li job output`'s answer) — only a file
    its artifacts listing names (`li job output --artifact`, `li serve`'s download) — read as every
    file under a run is (relative to the run's folder, no link followed, no FIFO opened, bounded)."""
    from lionrun.entrypoints.container import get_container

    listing = data["artifacts"]
    if not listing["available"]:
        raise ContractError(ErrorKind.UNAVAILABLE, f"the artifacts of {data['run_id']} cannot be listed "
                            f"({listing['reason_code']}): {listing['detail']}", {"run_id": data["run_id"]})
    rows = [row for row in listing["value"] or [] if isinstance(row, dict)]
    row = next((r for r in rows if r.get("name") == name or r.get("path") == name), None)
    if row is None:
        names = ", ".join(str(r.get("name")) for r in rows[:20]) or "none"
        raise ContractError(ErrorKind.NOT_FOUND, f"{data['run_id']} has no artifact {name!r} (artifacts: {names})",
                            {"run_id": data["run_id"], "artifact": name})
    if row.get("type", "file") != "file":
        raise ContractError(ErrorKind.INVALID_INPUT, f"artifact {name!r} is a {row.get('type')}, not a file; "
                            "it is not read", {"artifact": name})
    reader = getattr(get_container().core.store(), "artifact_bytes", None)
    if reader is None:
        raise ContractError(ErrorKind.UNAVAILABLE, "this store does not keep artifacts as files here",
                            {"artifact": name})
    try:
        body: bytes = reader(data["run_id"], str(row["name"]), limit)
    except OSError as exc:
        raise ContractError(ErrorKind.UNAVAILABLE, f"artifact {name!r} cannot be read: {exc}",
                            {"artifact": name}) from None
    return body


def show(data: dict[str, Any], args: Namespace) -> int:
    """The console text on stdout; anything about it that is not the text goes to stderr."""
    console = data["console"]
    if not console["available"]:
        print(f"li: console unavailable ({console['reason_code']}): {console['detail']}", file=sys.stderr)
        for line in artifact_lines(data["artifacts"]):
            print(line, file=sys.stderr)
        return 5
    text = console["value"]
    if console["truncated"] and getattr(args, "lines", None) is None:  # --lines gives whole lines already
        from lionrun.domain.console import from_line_start

        text = from_line_start(text)  # the tail's first line is cut: a person gets whole lines
    if rendered(args, data["run_id"]):
        from lionrun.domain.transcript import render

        text = render(text.encode("utf-8", "replace"))
    sys.stdout.write(text)
    sys.stdout.flush()
    if console["truncated"]:
        shown = text.count("\n") + (not text.endswith("\n") and bool(text))
        print(f"(the last {shown} lines; the console is longer — see --lines N or --tail-chars N)",
              file=sys.stderr)
    for line in artifact_lines(data["artifacts"]):
        print(line, file=sys.stderr)
    return 0


def artifact_lines(artifacts: dict[str, Any]) -> list[str]:
    """The artifacts, one a line with size and path (on stderr: stdout stays the console text)."""
    from lionrun.domain.run import printable

    if not artifacts["available"]:
        return [f"artifacts unavailable ({artifacts['reason_code']}): {artifacts['detail']}"]
    rows = [row for row in artifacts["value"] or [] if isinstance(row, dict)]
    if not rows:
        return ["artifacts: none"]
    lines = [f"artifacts ({len(rows)}):"]
    for row in rows:
        kind = row.get("type", "file")
        note = "" if kind == "file" else f"  ({kind}; not read)"
        if kind == "file" and row.get("available") is False:
            note = f"  (not kept by the store: {row.get('reason_code')})"
        lines.append(printable(f"  {_size(row.get('size'))}  {row.get('path')}{note}"))
    return lines


def _size(size: object) -> str:
    """`512 B`, `1.2 KiB`, `3.4 MiB`, right-aligned for a column."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return "?".rjust(9)
    value, unit = float(size), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            break
        value /= 1024
    text = f"{size} B" if unit == "B" else f"{value:.1f} {unit}"
    return text.rjust(9)


def follow(args: Namespace) -> int:
    """Stream the console as it grows on stdout, from its start (or the first whole line of its
    last MiB, or of its last --tail-chars), and li's own lines (the li log) on stderr; exit when
    the run records an end, with the run's exit code — the one follow loop `li agent` uses too.
    On an ended run it prints the whole console so bounded."""
    from lionrun.entrypoints.console_view import ConsoleView
    from lionrun.entrypoints.container import get_container

    run_id = run_id_arg(args, args.run_id)
    follower = get_container().reads.follower()
    given = args.tail_chars is not None
    offset = follower.tail_start(run_id, _tail_chars(args) if given else FOLLOW_FROM_MAX)
    if offset > 0 and not given:
        print(f"(the console is longer than {FOLLOW_FROM_MAX >> 20} MiB; following from a line in its last MiB)",
              file=sys.stderr)
    # li's own lines from as far back as the console's tail goes (all of them when it is followed whole)
    li_offset = follower.tail_start(run_id, _tail_chars(args), li=True) if offset > 0 else 0
    view = ConsoleView(sys.stdout.buffer, sys.stderr.buffer, rendered=rendered(args, run_id), cut_first_line=offset > 0)
    try:
        ended: FollowEnd = follower.render(run_id, view, offset, li_offset)  # refuses a missing or unusable run first
    except KeyboardInterrupt:  # the terminal is only a view: the run goes on
        from lionrun.entrypoints.verbs._common import stopped_watching

        view.flush()
        return stopped_watching([run_id], "li job output {} --follow")
    if ended.detail:
        print(f"li: {run_id}: {ended.detail}", file=sys.stderr)
    return ended.exit_code


def rendered(args: Namespace, run_id: str) -> bool:
    """A transcript unless --raw, for a run an agent CLI takes part in (per its request.json).

    A request that cannot be read still renders: a line that is no agent event is shown as it is.
    """
    from lionrun.domain.untrusted import parse_json
    from lionrun.entrypoints.console_view import rendered_for
    from lionrun.entrypoints.container import get_container

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
