"""`li job status RUN_ID`: the producer's derivations, advisory liveness and D7 fields (D4, D6)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from entrypoints.verbs._common import run_id_arg, this


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("status", help="one run's status, terminal and outcome")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from entrypoints import services

    reads = services.reads()
    result: dict[str, Any] = reads.status(run_id_arg(args, args.run_id))
    return result


def human(args: Namespace) -> int:
    return show(run(args), args)


def show(data: dict[str, Any], args: Namespace) -> int:
    """A short readable summary; unavailable fields say why instead of pretending to be empty."""
    outcome = data["outcome"] or "-"
    lines = [
        f"{data['run_id']}  {data['kind']}  {data['label'] or ''}".rstrip(),
        f"  status     {data['status']}  (terminal: {_yes(data['terminal'])}, outcome: {outcome})",
    ]
    if data["reason_code"]:
        lines.append(f"  reason     {data['reason_code']}")
    if data.get("reap_withheld"):
        lines.append(f"  not ended  its end is not recorded by this reader ({data['reap_withheld']}): only the "
                     f"store's owner records it")
    seen = data.get("runner_end")
    if isinstance(seen, dict):
        lines.append(f"  NOT SO     the runner saw the work end {seen.get('status')} (outcome {seen.get('outcome')}, "
                     f"exit {seen.get('exit_code')}); the end recorded above is not the one it wrote "
                     f"({seen.get('reason_code')})")
    if data.get("confinement"):
        why = f" ({data['confinement_detail']})" if data.get("confinement_detail") else ""
        lines.append(f"  confined   {'the store hidden from the work' if data['confinement'] == 'store_hidden' else 'no: the work could reach the store'}{why}")
    if data.get("retry_of"):
        lines.append(f"  retry of   {data['retry_of']}")
    if data.get("model"):
        lines.append(f"  model      {data['model']}")
    if data["terminal"] and data.get("exit_code") is not None:
        lines.append(f"  exit code  {data['exit_code']}")
    lines.extend(leg_lines(data["manifest"], data["kind"]))
    lines.append(f"  process    pid {data['pid'] if data['pid'] is not None else '-'}, alive: {_yes(data['alive'])}"
                 f"{'  (possibly orphaned)' if data['possibly_orphaned'] else ''}")
    job = data.get("job")
    if isinstance(job, dict):
        where = f" on {job['cluster']}" if job.get("cluster") else ""
        lines.append(f"  job        {job.get('executor')} job {job.get('job_id')}{where}")
    lines.append(f"  submitted  {data['submitted_at']}  ({human_age(data['age_seconds'])} ago)")
    if data["finished_at"]:
        lines.append(f"  finished   {data['finished_at']}")
    lines.append(f"  notice     {_notice(data['delivery'])}")
    lines.append(f"  usage      {_usage(data['usage'])}")
    agents = _agents(data.get("agents"))
    if agents:
        lines.append(f"  agents     {agents}")
    print("\n".join(lines))
    return 0


def legs_of(manifest: dict[str, Any], kind: str | None) -> list[tuple[str, str, str, str]]:
    """A flow's or fanout's legs as the manifest recorded them: (id, model, status, how it ended)."""
    value = manifest.get("value") if manifest.get("available") else None
    legs = value.get("legs") if isinstance(value, dict) else None
    if kind == "agent" or not isinstance(legs, list):
        return []
    from domain.run import printable

    found = []
    for leg in legs[:64]:
        if not isinstance(leg, dict):
            continue
        code = leg.get("exit_code")
        reason = f"({leg['reason_code']})" if isinstance(leg.get("reason_code"), str) else ""
        exit_text = f"exit code {code}" if isinstance(code, int) and not isinstance(code, bool) and code else ""
        found.append(tuple(printable(str(leg.get(key) or "-")) for key in ("id", "model", "status"))
                     + (printable(" ".join(filter(None, (reason, exit_text)))),))
    return found  # type: ignore[return-value]


def leg_lines(manifest: dict[str, Any], kind: str | None) -> list[str]:
    legs = legs_of(manifest, kind)
    if not legs:
        return []
    return ["  legs", *(f"    {leg:<12} {model:<16} {status} {how}".rstrip() for leg, model, status, how in legs)]


def _yes(value: bool | None) -> str:
    return "unknown" if value is None else ("yes" if value else "no")


def human_age(seconds: float) -> str:
    """`42s`, `17m`, `5h`, `3d`: how long ago, for people."""
    seconds = max(0, int(seconds))
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m"
    return f"{seconds // 3600}h" if seconds < 172800 else f"{seconds // 86400}d"


def _unavailable(field: dict[str, Any]) -> str:
    return f"unavailable ({field['reason_code']}): {field['detail']}"


def _notice(delivery: dict[str, Any]) -> str:
    if not delivery["available"]:
        return _unavailable(delivery)
    value = delivery["value"]
    if not value.get("attempted"):
        return "none configured"
    if value.get("ok") is None:
        return "attempted, outcome unknown"
    return "delivered" if value["ok"] else f"failed ({value.get('failure_class') or value.get('error')})"


def _agents(agents: dict[str, Any] | None) -> str:
    """`claude: permission edits, args --max-turns 3`; empty for a run with no agent CLI."""
    import shlex

    if agents is None:
        return ""
    if not agents["available"]:
        return _unavailable(agents)
    return "; ".join(
        f"{name}: permission {options.get('permission_mode') or 'the CLI default'}"
        + (f", args {shlex.join(options['provider_args'])}" if options.get("provider_args") else "")
        for name, options in agents["value"].items())


def _usage(usage: dict[str, Any]) -> str:
    if not usage["available"]:
        return _unavailable(usage)
    return ", ".join(f"{key} {_metered(value)}" for key, value in usage["value"].items()) or "(empty meter)"


def _metered(value: Any) -> str:
    """A meter reading; a reading the provider did not report says so rather than showing a zero."""
    if isinstance(value, dict) and "available" in value:
        return _metered(value.get("value")) if value["available"] else f"unavailable ({value.get('reason_code')})"
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items())
    return str(value)
