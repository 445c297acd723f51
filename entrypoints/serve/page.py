"""The page's HTML, written as strings: every value a run could have written goes through `e()`.

No template engine (one less dependency at start-up); no inline script or style (the CSP refuses
both): behaviour is /assets/serve.js, looks are /assets/serve.css.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from lionrun.application.board import Entry
from lionrun.domain.board import FILTERS, GROUP_TITLES, GROUPS, Group, elapsed_words

CONSOLE_KEEP_CHARS = 200_000  # what the page keeps of a followed console (serve.js trims to it)


def e(value: object) -> str:
    """Text as HTML text or attribute: `<script>` stays those eight characters."""
    return escape("" if value is None else str(value), quote=True)


def layout(title: str, body: str, live: str = "") -> str:
    """A whole page; `live` is the event stream serve.js follows (none: a still page)."""
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{e(title)}</title><link rel=\"stylesheet\" href=\"/assets/serve.css\">"
            "<script src=\"/assets/serve.js\" defer></script></head>"
            f"<body data-live=\"{e(live)}\" data-keep=\"{CONSOLE_KEEP_CHARS}\">"
            "<header><a class=\"home\" href=\"/\">li</a> <span class=\"live-state\" id=\"live-state\"></span></header>"
            f"<main>{body}</main></body></html>\n")


def short(run_id: str) -> str:
    return run_id[-6:]


def row_html(entry: Entry, csrf: str = "") -> str:
    """One run's line on the board: what a person needs to decide whether to open it (and, for a
    run waiting on a person's approval, its open requests with Approve and Deny when `csrf` is given)."""
    row = entry.row
    status = row.get("status") or "could not read"
    bits = [f"<a class=\"id\" href=\"/runs/{e(entry.run_id)}\">{e(short(entry.run_id))}</a>",
            f"<span class=\"status s-{e(status)}\">{e(status)}</span>"]
    if row.get("outcome"):
        bits.append(f"<span class=\"outcome\">{e(row['outcome'])}</span>")
    if row.get("reason_code"):
        bits.append(f"<span class=\"reason\">{e(row['reason_code'])}</span>")
    for name in ("label", "model", "queue", "host"):
        if row.get(name):
            bits.append(f"<span class=\"{name}\" title=\"{name}\">{e(_hostname(row[name]) if name == 'host' else row[name])}</span>")
    bits.extend(_group_detail(entry))
    error = row.get("error")
    if error:
        bits.append(f"<span class=\"error\">could not read: {e(error.get('reason_code') or error.get('kind'))}</span>")
    asked = approval_list(entry.run_id, entry.approvals, csrf) if entry.approvals else ""
    return (f"<li class=\"run\" id=\"run-{e(entry.run_id)}\" data-id=\"{e(entry.run_id)}\" "
            f"data-group=\"{e(entry.group)}\">{' '.join(bits)}{asked}</li>")


# -- approvals -------------------------------------------------------------------------

def approval_list(run_id: str, requests: Iterable[Mapping[str, Any]], csrf: str) -> str:
    """A run's permission requests: each open one with Approve and Deny (a reason box) when `csrf`
    is given; an answered one with its answer. The tool's input is shown as text, never markup."""
    items = [approval_html(run_id, request, csrf) for request in requests]
    return f"<ul class=\"approvals\">{''.join(items)}</ul>"


def approval_html(run_id: str, request: Mapping[str, Any], csrf: str) -> str:
    ident = str(request.get("id"))
    given = _json_text(request.get("input"))
    head = (f"<span class=\"request-id\">{e(ident)}</span> <span class=\"tool\">{e(request.get('tool'))}</span>"
            f"<pre class=\"tool-input\">{e(given[:4000])}{'…' if len(given) > 4000 else ''}</pre>")
    behavior = request.get("behavior")
    if behavior is not None:
        said = f" — {e(request.get('message'))}" if request.get("message") else ""
        return (f"<li class=\"approval answered\" data-request=\"{e(ident)}\">{head}<span class=\"answer\">"
                f"{e(behavior)} by {e(request.get('answered_by'))}{said}</span></li>")
    if not csrf:
        return f"<li class=\"approval open\" data-request=\"{e(ident)}\">{head}</li>"
    target = f"/runs/{e(quote(run_id))}"
    hidden = f"{csrf_field(csrf)}<input type=\"hidden\" name=\"request\" value=\"{e(ident)}\">"
    return (f"<li class=\"approval open\" data-request=\"{e(ident)}\">{head}"
            f"<form class=\"approve\" method=\"post\" action=\"{target}/approve\">{hidden}"
            f"<button class=\"approve\" id=\"approve-{e(ident)}\">Approve</button></form>"
            f"<form class=\"deny\" method=\"post\" action=\"{target}/deny\">{hidden}"
            f"<input type=\"text\" name=\"reason\" id=\"deny-reason-{e(ident)}\" maxlength=\"2000\" "
            f"placeholder=\"reason the agent is told\"><button class=\"danger\" id=\"deny-{e(ident)}\">Deny</button>"
            "</form></li>")


def approvals_section(status: Mapping[str, Any], csrf: str) -> str:
    """Every permission request of the run (open ones answerable while it goes); nothing if it never asked."""
    requests = [r for r in status.get("approvals") or [] if isinstance(r, Mapping)]
    if not requests:
        return ""
    answerable = "" if status.get("terminal") else csrf
    return (f"<section class=\"approvals\" id=\"approvals\"><h2>Permission requests</h2>"
            f"{approval_list(str(status['run_id']), requests, answerable)}</section>")


def budget_section(status: Mapping[str, Any]) -> str:
    """The run's budget: each limit, what was spent, and which limit stopped it."""
    budget = status.get("budget")
    if not isinstance(budget, Mapping):
        return ""
    rows = []
    for limit, spent, what in (("max_tokens", "spent_tokens", "tokens"), ("max_cost_usd", "spent_cost_usd", "cost")):
        if budget.get(limit) is None:
            continue
        used = budget.get(spent)
        used_text = "<span class=\"unread\">could not read: not reported</span>" if used is None else \
            f"<code>{e(used)}</code>"
        over = " <strong class=\"exceeded\">exceeded</strong>" if budget.get("exceeded") == what else ""
        rows.append(f"<tr id=\"budget-{what}\"><th>{e(what)}</th><td>spent {used_text} of "
                    f"<code>{e(budget.get(limit))}</code>{over}</td></tr>")
    return f"<section class=\"budget\" id=\"budget\"><h2>Budget</h2><table>{''.join(rows)}</table></section>"


def attempts_section(status: Mapping[str, Any]) -> str:
    """The attempts of a run with a retry policy, in order: how each ended and when the next began."""
    attempts = [a for a in status.get("attempts") or [] if isinstance(a, Mapping)]
    if not attempts:
        return ""
    rows = "".join(f"<tr><td>{e(a.get('attempt'))}</td><td>{e(a.get('started_at'))}</td><td>{e(a.get('ended_at'))}</td>"
                   f"<td>{e(a.get('status'))}</td><td>{e(a.get('reason_code'))}</td><td>{e(a.get('next_at'))}</td></tr>"
                   for a in attempts)
    return ("<section class=\"attempts\" id=\"attempts\"><h2>Attempts</h2><table><tr><th>#</th><th>started</th>"
            f"<th>ended</th><th>status</th><th>reason</th><th>next at</th></tr>{rows}</table></section>")


def _group_detail(entry: Entry) -> list[str]:
    """What each group adds: elapsed time and last line, queue position, the changes' +/−."""
    row, found = entry.row, []
    if entry.group == "working":
        since = row.get("started_at") or row.get("submitted_at")
        found.append(f"<span class=\"elapsed\" data-since=\"{e(since)}\">{e(elapsed_words(entry.age_seconds))}</span>")
        if entry.last_line:
            found.append(f"<span class=\"last-line\">{e(entry.last_line)}</span>")
    if entry.queue_position is not None:
        found.append(f"<span class=\"position\">#{e(entry.queue_position)} in {e(row.get('queue'))}</span>")
    changes = row.get("changes")
    if isinstance(changes, dict):
        found.append(f"<span class=\"changes\"><span class=\"ins\">+{e(changes.get('insertions'))}</span>"
                     f"<span class=\"del\">−{e(changes.get('deletions'))}</span></span>")
    return found


def _hostname(host: str) -> str:
    return host[:12]


def board_page(entries: Iterable[Entry], chosen: Mapping[str, str], options: Mapping[str, list[str]],
               since: int = 0, said: str = "", csrf: str = "") -> str:
    """The board: the filters, then the four groups with their runs, newest first."""
    by_group: dict[Group, list[str]] = {group: [] for group in GROUPS}
    for entry in entries:
        by_group[entry.group].append(row_html(entry, csrf))
    sections = "".join(
        f"<section class=\"group\" id=\"group-{group}\" data-group=\"{group}\"><h2>{e(GROUP_TITLES[group])} "
        f"<span class=\"count\">{len(rows)}</span></h2><ul class=\"runs\">{''.join(rows)}</ul></section>"
        for group, rows in by_group.items())
    live = "/events?" + urlencode({"since": since, **{k: v for k, v in chosen.items() if v}})
    note = f"<p class=\"said\" id=\"said\">{e(said)}</p>" if said else ""
    return layout("li: runs", note + filters_form(chosen, options) + f"<div class=\"board\">{sections}</div>", live)


def filters_form(chosen: Mapping[str, str], options: Mapping[str, list[str]]) -> str:
    fields = []
    for name in FILTERS:
        values = options.get(name, [])
        picked = chosen.get(name, "")
        choices = "".join(f"<option value=\"{e(v)}\"{' selected' if v == picked else ''}>"
                          f"{e(_hostname(v) if name == 'host' else v)}</option>" for v in values)
        fields.append(f"<label>{name} <select name=\"{name}\"><option value=\"\">all</option>{choices}</select></label>")
    return f"<form class=\"filters\" method=\"get\" action=\"/\">{''.join(fields)}<button>filter</button></form>"


def availability(value: Mapping[str, Any] | None, show: str = "") -> str:
    """A D7 availability: its value, or "could not read" with the reason — never "none"."""
    if value is None:
        return "<span class=\"unread\">could not read: not answered</span>"
    if not value.get("available"):
        detail = f" — {value.get('detail')}" if value.get("detail") else ""
        return f"<span class=\"unread\">could not read: {e(value.get('reason_code'))}{e(detail)}</span>"
    if show:
        return show
    inner = value.get("value")
    if isinstance(inner, dict) and inner:
        return nested(inner)
    return f"<code>{e(_json_text(inner))}</code>"


def nested(values: Mapping[str, Any]) -> str:
    """A meter or a record's object: one row a key; an inner availability said as such (D7)."""
    rows = []
    for key, value in values.items():
        if isinstance(value, dict) and "available" in value and "reason_code" in value:
            shown = availability(value)
        elif value is None:
            shown = "<span class=\"null\">null</span>"
        else:
            shown = f"<code>{e(_json_text(value))}</code>"
        rows.append(f"<tr><th>{e(key)}</th><td>{shown}</td></tr>")
    return f"<table class=\"nested\">{''.join(rows)}</table>"


def field_rows(status: Mapping[str, Any], names: Iterable[str]) -> str:
    rows = []
    for name in names:
        value = status.get(name)
        shown = "<span class=\"null\">null</span>" if value is None else f"<code>{e(_json_text(value))}</code>"
        rows.append(f"<tr><th>{e(name)}</th><td id=\"f-{e(name)}\">{shown}</td></tr>")
    return "".join(rows)


def _json_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, sort_keys=True)
    return str(value)


CONTRACT_FIELDS = ("run_id", "kind", "label", "status", "terminal", "outcome", "reason_code", "possibly_orphaned",
                   "spawn_state", "submitted_at", "started_at", "finished_at", "host", "queue", "queue_position",
                   "model", "exit_code", "alive", "pid", "session_id", "retry_at", "confinement")


def run_page(status: Mapping[str, Any], output: Mapping[str, Any], diff: Mapping[str, Any] | None,
             transcript: str | None, csrf: str, said: str = "", follow_from: int = 0) -> str:
    """A run's page: the contract's fields verbatim, its console live, transcript, artifacts, usage, diff, lineage."""
    run_id = str(status["run_id"])
    parts = [f"<h1>run <code>{e(run_id)}</code></h1>"]
    if said:
        parts.append(f"<p class=\"said\" id=\"said\">{e(said)}</p>")
    parts.append(actions(status, csrf))
    parts.append(summary(status))
    parts.append(approvals_section(status, csrf))
    parts.append(budget_section(status))
    parts.append(attempts_section(status))
    if diff is not None:
        parts.append(diff_section(diff))
    parts.append(console_section(run_id, output.get("console"), follow_from))
    if transcript is not None:
        parts.append(f"<section class=\"transcript\"><h2>Transcript</h2><pre>{e(transcript)}</pre></section>")
    parts.append(artifacts_section(run_id, output.get("artifacts")))
    parts.append(lineage(status))
    half = len(CONTRACT_FIELDS) // 2
    parts.append("<section class=\"fields\"><h2>Status, as li job status --machine answers</h2><div class=\"tables\">"
                 f"<table>{field_rows(status, CONTRACT_FIELDS[:half])}</table>"
                 f"<table>{field_rows(status, CONTRACT_FIELDS[half:])}</table>"
                 f"<table><tr><th>manifest</th><td>{availability(status.get('manifest'), '<code>recorded</code>')}</td></tr>"
                 f"<tr><th>usage</th><td>{availability(status.get('usage'))}</td></tr>"
                 f"<tr><th>cost_usd</th><td>{_cost(status.get('cost_usd'))}</td></tr>"
                 f"<tr><th>delivery</th><td>{availability(status.get('delivery'))}</td></tr>"
                 f"<tr><th>agents</th><td>{availability(status.get('agents'))}</td></tr></table></div></section>")
    return layout(f"li: {short(run_id)} {status.get('status')}", "".join(parts), f"/runs/{quote(run_id)}/events")


def summary(status: Mapping[str, Any]) -> str:
    """The run's state in one line, at the top: status, outcome and reason as the contract says them."""
    bits = [f"<span class=\"status s-{e(status.get('status'))}\" id=\"sum-status\">{e(status.get('status'))}</span>"]
    for name in ("outcome", "reason_code", "label", "model"):
        if status.get(name) is not None:
            bits.append(f"<span class=\"{e(name)}\" id=\"sum-{e(name)}\">{e(status.get(name))}</span>")
    if status.get("host"):
        bits.append(f"<span class=\"host\" title=\"host\">{e(_hostname(str(status['host'])))}</span>")
    return f"<p class=\"summary\">{' '.join(bits)}</p>"


def _cost(value: object) -> str:
    return "<span class=\"unread\">could not read: not reported</span>" if value is None else f"<code>{e(value)}</code>"


def lineage(status: Mapping[str, Any]) -> str:
    links = []
    for name in ("retry_of", "continues", "parent"):
        if status.get(name):
            links.append(f"<li>{name}: {run_link(status[name])}</li>")
    chain = status.get("chain") or []
    if chain:
        links.append("<li>chain: " + " → ".join(run_link(r) for r in chain) + "</li>")
    body = "".join(links) or "<li>none: submitted afresh</li>"
    return f"<section class=\"lineage\"><h2>Lineage</h2><ul>{body}</ul></section>"


def run_link(run_id: object) -> str:
    return f"<a href=\"/runs/{e(quote(str(run_id)))}\">{e(run_id)}</a>"


def console_section(run_id: str, console: Mapping[str, Any] | None, follow_from: int) -> str:
    note = "" if console is None or console.get("available") else availability(console)
    return (f"<section class=\"console\"><h2>Console</h2>{note}"
            f"<p class=\"cut\" id=\"console-cut\" hidden></p>"
            f"<pre id=\"console\" data-from=\"{follow_from}\"></pre></section>")


def artifacts_section(run_id: str, artifacts: Mapping[str, Any] | None) -> str:
    if artifacts is None or not artifacts.get("available"):
        return f"<section class=\"artifacts\"><h2>Artifacts</h2>{availability(artifacts)}</section>"
    items = []
    for item in artifacts.get("value") or []:
        name = str(item.get("name"))
        if item.get("type", "file") == "file" and item.get("available", True):
            items.append(f"<li><a href=\"/runs/{e(quote(run_id))}/artifacts/{e(quote(name))}\" download>"
                         f"{e(name)}</a> <span class=\"size\">{e(item.get('size'))} bytes</span></li>")
        else:
            items.append(f"<li>{e(name)} <span class=\"unread\">({e(item.get('type'))}, "
                         f"{e(item.get('reason_code') or 'not downloadable')})</span></li>")
    return f"<section class=\"artifacts\"><h2>Artifacts</h2><ul>{''.join(items) or '<li>no artifacts</li>'}</ul></section>"


def diff_section(diff: Mapping[str, Any]) -> str:
    """The worktree's changes: files with +/−, then the patch's hunks, each line classed."""
    files, patch = diff.get("files"), diff.get("patch")
    rows = []
    if files and files.get("available"):
        for item in files.get("value") or []:
            counts = "binary" if item.get("insertions") is None else \
                f"<span class=\"ins\">+{e(item['insertions'])}</span> <span class=\"del\">−{e(item['deletions'])}</span>"
            rows.append(f"<li><code>{e(item.get('path'))}</code> {counts}</li>")
    listed = f"<ul class=\"files\">{''.join(rows)}</ul>" if rows else availability(files)
    if patch and patch.get("available"):
        lines = []
        for line in str(patch.get("value") or "").splitlines():
            kind = "ins" if line.startswith("+") and not line.startswith("+++") else \
                "del" if line.startswith("-") and not line.startswith("---") else \
                "hunk" if line.startswith("@@") else "ctx"
            lines.append(f"<span class=\"{kind}\">{e(line)}</span>")
        body = "<pre class=\"patch\">" + "\n".join(lines) + "</pre>"
    else:
        body = availability(patch)
    return f"<section class=\"diff\" id=\"diff\"><h2>Changes</h2>{listed}{body}</section>"


def csrf_field(csrf: str) -> str:
    return f"<input type=\"hidden\" name=\"csrf_token\" value=\"{e(csrf)}\">"


DESTRUCTIVE = {"kill": "Kill this run: SIGTERM to all its processes, SIGKILL after a grace.",
               "rm": "Remove this run's record, console and artifacts from the store.",
               "apply": "Apply this run's changes to the checkout it was submitted from (not committed)."}


def actions(status: Mapping[str, Any], csrf: str) -> str:
    """The actions a run offers now: kill while it goes; retry, reply, apply, remove once it ended."""
    run_id = quote(str(status["run_id"]))
    terminal = bool(status.get("terminal"))
    out = []
    if not terminal:
        out.append(f"<a class=\"button danger\" id=\"kill\" href=\"/runs/{run_id}/confirm/kill\">kill…</a>")
    else:
        out.append(f"<form method=\"post\" action=\"/runs/{run_id}/retry\">{csrf_field(csrf)}"
                   "<button id=\"retry\">retry</button></form>")
        if status.get("worktree"):
            out.append(f"<a class=\"button\" id=\"apply\" href=\"/runs/{run_id}/confirm/apply\">apply…</a>")
        out.append(f"<a class=\"button danger\" id=\"rm\" href=\"/runs/{run_id}/confirm/rm\">remove…</a>")
        if status.get("session_id"):
            out.append(f"<form class=\"reply\" method=\"post\" action=\"/runs/{run_id}/reply\">{csrf_field(csrf)}"
                       "<textarea name=\"prompt\" id=\"reply-text\" rows=\"2\" required "
                       "placeholder=\"reply: the next prompt\"></textarea><button id=\"reply\">reply</button></form>")
    return f"<nav class=\"actions\">{''.join(out)}</nav>"


def confirm_page(run_id: str, action: str, csrf: str) -> str:
    what = DESTRUCTIVE[action]
    body = (f"<h1>{e(action)} <code>{e(run_id)}</code>?</h1><p>{e(what)}</p>"
            f"<form method=\"post\" action=\"/runs/{e(quote(run_id))}/{e(action)}\">{csrf_field(csrf)}"
            f"<button class=\"danger\" id=\"confirm\">yes, {e(action)}</button> "
            f"<a href=\"/runs/{e(quote(run_id))}\">no, go back</a></form>")
    return layout(f"li: {action} {short(run_id)}?", body)


def message_page(title: str, text: str, back: str = "/") -> str:
    return layout(f"li: {title}", f"<h1>{e(title)}</h1><p class=\"said\">{e(text)}</p><p><a href=\"{e(back)}\">back</a></p>")
