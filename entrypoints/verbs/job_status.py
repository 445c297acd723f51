"""`li job status RUN_ID`: the producer's derivations, advisory liveness and D7 fields (D4, D6)."""

from __future__ import annotations

from typing import Any

from lionrun.entrypoints.verbs._common import run_id_arg, this

# argparse (with gettext) is not imported by a read the dispatcher answers without a parser
# (entrypoints/startup/fast_path.py): its Namespace is an annotation only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from argparse import Namespace


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("status", help="one run's status, terminal and outcome")
    parser.add_argument("run_id", metavar="RUN_ID")
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    from lionrun.entrypoints.container import get_container

    reads = get_container().reads.reads()
    result: dict[str, Any] = reads.status(run_id_arg(args, args.run_id))
    return result


def human(args: Namespace) -> int:
    return show(run(args), args)


def show(data: dict[str, Any], args: Namespace) -> int:
    """A short readable summary in the terminal's width; unavailable fields say why instead of
    pretending to be empty. Times are local, with ages and durations (domain.timetext)."""
    lines = [*head_lines(data), *warning_lines(data), *after_lines(data), *origin_lines(data),
             *worktree_lines(data), *work_lines(data), *time_lines(data), *meter_lines(data)]
    print("\n".join(wrapped(lines)))
    return 0


def head_lines(data: dict[str, Any]) -> list[str]:
    """The run, its status and its end (or why the end is not recorded here)."""
    outcome = data["outcome"] or "-"
    ended = "ended" if data["terminal"] else "not ended"
    lines = [
        f"{data['run_id']}  {data['kind']}  {data['label'] or ''}".rstrip(),
        f"  status     {data['status']}  ({ended}, outcome: {outcome})",
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
    return lines


def warning_lines(data: dict[str, Any]) -> list[str]:
    """How the work was kept apart from the store and the host, and what it changed in the repository."""
    lines = []
    if data.get("confinement"):
        why = f" ({data['confinement_detail']})" if data.get("confinement_detail") else ""
        lines.append(f"  confined   {'the store hidden from the work' if data['confinement'] == 'store_hidden' else 'no: the work could reach the store'}{why}")
    if data.get("processes"):
        why = f" ({data['processes_detail']})" if data.get("processes_detail") else ""
        lines.append(f"  processes  {'in a PID namespace of their own' if data['processes'] == 'pid_namespace' else 'shared with the host'}{why}")
    if data.get("repository_changes"):
        lines.append(f"  CHANGED    the work changed the repository's shared git files (git runs them for you): "
                     f"{', '.join(data['repository_changes'])} — look before your next git command")
    return lines


def origin_lines(data: dict[str, Any]) -> list[str]:
    """The run this one retries, and the run whose confined work submitted it."""
    lines = []
    if data.get("retry_of"):
        lines.append(f"  retry of   {data['retry_of']}")
    if data.get("parent"):
        lines.append(f"  parent     {data['parent']}  (its confined work submitted this run)")
    return lines


def work_lines(data: dict[str, Any]) -> list[str]:
    """The model, the work's exit code, its legs, its process and its batch job."""
    lines = []
    if data.get("model"):
        lines.append(f"  model      {data['model']}")
    if data["terminal"] and data.get("exit_code") is not None:
        lines.append(f"  exit code  {data['exit_code']}")
    lines.extend(leg_lines(data["manifest"], data["kind"]))
    lines.append(f"  process    {_process(data)}")
    job = data.get("job")
    if isinstance(job, dict):
        where = f" on {job['cluster']}" if job.get("cluster") else ""
        lines.append(f"  job        {job.get('executor')} job {job.get('job_id')}{where}")
    return lines


def time_lines(data: dict[str, Any]) -> list[str]:
    """When it was submitted, started and finished (local times, ages and durations)."""
    from datetime import UTC, datetime

    from lionrun.domain.timetext import age, clock, duration, moment

    now = datetime.now(UTC)
    submitted, started, finished = (moment(data.get(key)) for key in ("submitted_at", "started_at", "finished_at"))
    when = clock(submitted, now) if submitted is not None else data["submitted_at"]
    lines = [f"  submitted  {when}  ({age(data['age_seconds'])} ago)"]
    if started is not None:
        lines.append(f"  started    {clock(started, now)}")
    if finished is not None:
        took = f"  (took {duration((finished - started).total_seconds())})" if started is not None else ""
        lines.append(f"  finished   {clock(finished, now)}{took}")
    elif started is not None and not data["terminal"]:
        lines.append(f"  running    for {duration((now - started).total_seconds())}")
    return lines


def meter_lines(data: dict[str, Any]) -> list[str]:
    """The notice, what the agents used, and the agents' options."""
    lines = [f"  notice     {_notice(data['delivery'])}"]
    usage = _usage(data["usage"], data.get("model"))
    if not data["terminal"] and not data["usage"]["available"]:
        usage = ""  # a run still going has no meter yet: that is not news
    if usage:
        lines.append(f"  usage      {usage}")
    agents = _agents(data.get("agents"))
    if agents:
        lines.append(f"  agents     {agents}")
    return lines


def wrapped(lines: list[str]) -> list[str]:
    """Each `  field      value` line folded to the terminal's width under its value
    (`una`/`vailable` at 60 columns; entrypoints.table.fold); a pipe or a file gets the lines whole."""
    from lionrun.entrypoints.table import fold, stdout_width

    width = stdout_width()
    return [part for line in lines for part in fold(line, width, _indent(line))]


def _indent(line: str) -> int:
    """Where a field's value starts (`  status     …`: 13), else 4."""
    return 13 if line.startswith("  ") and len(line) > 13 and line[11:13] == "  " else 4


def _process(data: dict[str, Any]) -> str:
    """What is alive, in words, from what the answer carries and nothing else: li's own liveness
    judgement (`alive`, and `finding` where the answer names it), never a probe of this reader's
    (`alive: yes` for a runner pid that was gone; a pid here says nothing of another
    host's run, a Slurm run or a reused pid)."""
    orphan = "  (possibly orphaned)" if data["possibly_orphaned"] else ""
    return liveness_words(data.get("finding"), data["alive"], data["pid"], data.get("job"),
                          data.get("alive_processes")) + orphan


def liveness_words(finding: str | None, alive: bool | None, pid: int | None, job: dict[str, Any] | None = None,
                   processes: int | None = None) -> str:
    """The person's `process` line. `finding` is the liveness finding's code (domain.evidence,
    domain.slurm) and `processes` how many of the run's processes besides its runner still run,
    when the answer names them; without them only `alive` speaks, and it says the run (its runner
    or work the runner started) is alive, never which of them."""
    from lionrun.domain import evidence as e

    runner = f"runner pid {pid}" if pid is not None else "no runner recorded"
    batch = f"Slurm job {job.get('job_id')}" if isinstance(job, dict) and job.get("job_id") else None
    if alive is False:
        return f"{runner} and the run's work have exited" if pid is not None else f"{runner}; nothing of it runs"
    if finding == e.SESSION_ALIVE:
        still = "work of the run" if processes is None else _processes(processes)
        return f"runner gone (pid {pid}), {still} still running"
    if finding == e.ALIVE:
        return f"{runner} running"
    if finding == e.JOB_ALIVE:
        return f"{batch or 'its Slurm job'} running"
    if finding == e.JOB_QUEUED:
        return f"{batch or 'its Slurm job'} waiting in the cluster's queue"
    if finding == e.FOREIGN_HOST:
        return f"{runner}, on another host: only that host can tell whether it runs"
    if finding == e.CLUSTER_UNREACHABLE:
        return f"{batch or 'its Slurm job'}: the cluster could not be asked whether it runs"
    if alive is True:
        return f"the run is running (its runner, pid {pid}, or work it started)" if pid is not None else (
            f"{runner}; the run is running")
    why = f" ({finding.replace('_', ' ')})" if finding else ""
    return f"{runner}; whether anything of the run is alive is unknown{why}"


def _processes(count: int) -> str:
    return f"{count} process{'es' if count != 1 else ''} of the run"


def leg_lines(manifest: dict[str, Any], kind: str | None) -> list[str]:
    from lionrun.entrypoints.verbs._views import legs_of

    legs = legs_of(manifest, kind)
    if not legs:
        return []
    title = "steps" if kind == "flow" else "legs"  # a flow has steps; a fanout has legs
    return [f"  {title}", *(f"    {leg:<12} {model:<16} {status} {how}".rstrip() for leg, model, status, how in legs)]


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


NEVER_METERED = frozenset({"sh"})  # providers that never report cost or tokens: no line for them


def _usage(usage: dict[str, Any], model: str | None = None) -> str:
    """The meter, without the readings a provider never reports (a shell run has no tokens) and
    without the wall time (the duration says it)."""
    if not usage["available"]:
        return _unavailable(usage)
    provider = (model or "").split("/", 1)[0]
    shown = {key: value for key, value in usage["value"].items() if key != "wall_seconds"
             and not (provider in NEVER_METERED and isinstance(value, dict) and value.get("available") is False
                      and value.get("reason_code") == "not_reported")}
    return ", ".join(f"{key} {_metered(value)}" for key, value in shown.items())


def _metered(value: Any) -> str:
    """A meter reading; a reading the provider did not report says so rather than showing a zero."""
    if isinstance(value, dict) and "available" in value:
        return _metered(value.get("value")) if value["available"] else f"unavailable ({value.get('reason_code')})"
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def after_lines(data: dict[str, Any]) -> list[str]:
    """What a run waits for: each run it was submitted --after and how that stands, the
    one whose end ended it, and its priority."""
    lines = []
    if data.get("failed_dependency"):
        lines.append(f"  not run    {data['failed_dependency']} did not end as asked; the work never started")
    for dependency in data.get("after") or []:
        if dependency["terminal"]:
            how = f"ended {dependency['status']} ({dependency['outcome']}): " + (
                "as asked" if dependency["matched"] else "not as asked")
        elif dependency["state"] in ("stopped_without_end", "unresolved_spawn"):
            how = f"{dependency['state']}: no end will come by itself; `li job kill {data['run_id'][-6:]}` gives up"
        else:
            how = dependency["status"] or "cannot be read"
        lines.append(f"  after      {dependency['run_id']}:{dependency['condition']}  {how}")
    if data.get("priority"):
        lines.append(f"  priority   {data['priority']}")
    return lines


def worktree_lines(data: dict[str, Any]) -> list[str]:
    """The run's worktree, what li committed there, and the conversation it continues."""
    from lionrun.entrypoints.verbs._views import changes_cell

    lines = []
    worktree = data.get("worktree")
    if isinstance(worktree, dict):
        lines.append(f"  worktree   {worktree.get('path')} (branch {worktree.get('branch')}, "
                     f"from {str(worktree.get('base_commit'))[:12]})")
        changes = data.get("changes")
        if isinstance(changes, dict):
            commit = changes.get("commit")
            lines.append(f"  changes    {changes_cell(changes)}" + (f" in {str(commit)[:12]}" if commit else ""))
        else:
            lines.append("  changes    not committed yet" + (" (li job diff commits them)" if data["terminal"] else ""))
    for entry in data.get("leg_worktrees") or ():
        leg_tree, leg_changes = entry.get("worktree") or {}, entry.get("changes")
        done = changes_cell(leg_changes) if isinstance(leg_changes, dict) else "not committed yet"
        lines.append(f"  leg {entry.get('leg')}  {leg_tree.get('path')} (branch {leg_tree.get('branch')}): {done}")
    if data.get("continues"):
        lines.append(f"  continues  {data['continues']}")
    chain = data.get("chain")
    if isinstance(chain, list) and len(chain) > 1:
        lines.append(f"  chain      {' → '.join(str(r) for r in chain)}")
    return lines
