"""Agent providers: sh and each agent CLI (`domain/agents/`) as subprocesses in their own process groups.

No prompt is ever put on a command line, where every local user could read it in
/proc/PID/cmdline and where one string is capped at 128 KiB: the agent CLIs read it on stdin
(their documented headless input), and `sh` runs it as a script from an anonymous memory file
passed as a descriptor (`/bin/sh /dev/fd/N`), its stdin left at /dev/null.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import IO, Any

from lionrun.adapters import proctree
from lionrun.application.ports import Held, LegLaunch, Provider, ProviderResult
from lionrun.domain.agents import NAMES as AGENT_NAMES
from lionrun.domain.agents import AgentCli, agent, is_agent
from lionrun.domain.agents.reasons import IDLE_TIMEOUT
from lionrun.domain.evidence import KILL_GRACE
from lionrun.domain.run import RUN_TAG

IDLE_SAID = "li runner: no event from the agent for {seconds:g} s; stopping it\n"  # the lean supervisor's too
PUMP_JOIN = 5.0


class ChildGroups:
    """The process groups of running provider children, so a cancel can stop them all — and every
    other process of the run: this runner is a child subreaper, so what a leg started outside its
    group (an agent's shell tool in a session of its own) is still its descendant, or carries the
    run's tag (`adapters/proctree.py`)."""

    def __init__(self, run_id: str | None = None) -> None:
        self._lock = threading.RLock()  # re-entrant: the SIGTERM handler may interrupt a holder
        self._groups: set[int] = set()
        self.cancelled = False
        # What each leg's process does between fork and exec (the store hidden from it:
        # `adapters.confinement.StoreHider.engage` sets it); None: nothing.
        self.pre_exec: Callable[[], None] | None = None
        # The mark of what the run's head started for its work (a child run's detached runner is
        # no process of this run, adapters/broker.py); set with `pre_exec`.
        self.cut: bytes | None = None
        # What starts with the first leg this process starts (the broker's answering, which in a
        # run handed to the lean supervisor must wait for it: a request taken here just before the
        # exec would get no answer); None: nothing.
        self.on_first_leg: Callable[[], None] | None = None
        self._run_id = run_id

    def _run_tree(self) -> proctree.RunTree | None:
        """The run's processes besides this one; None outside a run (a process with no LI_RUN_ID,
        such as a test driving providers in-process, has no run whose processes these would be)."""
        run_id = self._run_id or os.environ.get(RUN_TAG)
        return proctree.RunTree(f"{RUN_TAG}={run_id}".encode(), self.cut) if run_id else None

    def _tree(self) -> dict[int, int]:
        tree = self._run_tree()
        return tree.alive() if tree is not None else {}

    def stop_strays(self, say: Callable[[str], None] | None = None, grace: float = KILL_GRACE,
                    leg: str | None = None) -> None:
        """Stop every process of the run that outlived its legs (SIGTERM, SIGKILL after `grace`)
        and wait until none lives (`grace` + PUMP_JOIN at most): before the end is recorded, and
        after each leg's own process ended (`leg`: its LI_LEG_ID; only what carries it is that
        leg's)."""
        import time  # the runner's, once (not a provider's import cost)

        def strays() -> dict[int, int]:
            return self.leg_strays(leg)

        left = proctree.left_running(strays)
        if not left:
            return
        if say is not None:
            say(f"li runner: stopping {len(left)} process(es) the work left running\n")
        proctree.signal_all(left, signal.SIGTERM)
        killed = False
        start = time.monotonic()
        while left and time.monotonic() - start < grace + PUMP_JOIN:
            time.sleep(0.05)
            proctree.reap_adopted(self._spared())
            left = strays()
            if left and not killed and time.monotonic() - start >= grace:
                killed = True
                proctree.signal_all(left, signal.SIGKILL)
        if left and say is not None:
            say(f"li runner: {len(left)} process(es) of the work could not be stopped: "
                f"{' '.join(map(str, sorted(left)))}\n")

    def leg_strays(self, leg: str | None) -> dict[int, int]:
        """The run's processes but this one (`leg`: only those that carry that leg's id). A leg's
        end takes only what carries its id: another leg may be forked and not yet registered (or
        just unregistered), and is no stray of this one. What lost its environment is taken by the
        run's last stop, before the end is recorded."""
        found = self._tree()
        if leg is None:
            return found
        mark = f"LI_LEG_ID={leg}".encode()
        return {pid: start for pid, start in found.items() if proctree.carries(pid, mark)}

    def _spared(self) -> set[int]:
        with self._lock:
            return set(self._groups)  # a leg's own process: its Popen waits for it

    def add(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)
            if self.cancelled:
                proctree.kill_group(pgid, signal.SIGTERM)
            first, self.on_first_leg = self.on_first_leg, None
        if first is not None:
            first()

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._groups.discard(pgid)

    def terminate_all(self) -> None:
        """SIGTERM every group now, SIGKILL whatever is left after a grace."""
        with self._lock:
            self.cancelled = True
            groups = set(self._groups)
        self._signal(groups, signal.SIGTERM)
        reaper = threading.Timer(KILL_GRACE, self._kill_rest)
        reaper.daemon = True  # never keeps a cancelled runner alive
        reaper.start()

    def _kill_rest(self) -> None:
        with self._lock:
            groups = set(self._groups)
        self._signal(groups, signal.SIGKILL)

    def _signal(self, groups: set[int], signum: int) -> None:
        """The legs' groups, then every other process of the run (none outside a run)."""
        tree = self._run_tree()
        if tree is not None:
            tree.signal(signum, groups)
            return
        for pgid in groups:
            proctree.kill_group(pgid, signum)


class ChildRun:
    """One provider child: own process group, stdout lines to a callback, stderr to the console;
    li's own lines about it (could not start, idle, strays) to the console's `say` (the li log)."""

    def __init__(self, groups: ChildGroups) -> None:
        self.groups = groups

    def __call__(self, argv: Sequence[str], cwd: str, env: Mapping[str, str], console: Any,
                 timeout: float | None, on_line: Callable[[str], None], stdin_text: str | None = None,
                 pass_fds: Sequence[int] = (), idle_timeout: float | None = None) -> tuple[int, bool, bool]:
        """Run to the end (or the timeout, which kills the whole group); returns (exit code, timed
        out, stopped idle: no line on stdout or stderr for `idle_timeout` seconds).

        `stdin_text` is written to the child's stdin (else it reads /dev/null); `pass_fds` are
        inherited at the same numbers, every other descriptor is closed.
        """
        step = self.groups.pre_exec
        enter: str | None = cwd
        try:
            if step is not None:  # confined first, its cwd entered only then
                from lionrun.adapters.confinement import check_folder, entering

                check_folder(cwd)
                step, enter = entering(step, cwd), None
            child = subprocess.Popen(
                list(argv), cwd=enter, env=dict(env), process_group=0, close_fds=True, pass_fds=tuple(pass_fds),
                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=step,
            )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            console.say(f"li runner: could not start {argv[0]}: {exc}\n")
            return 127, False, False
        self.groups.add(child.pid)
        try:
            return self._supervise(child, console, timeout, on_line, stdin_text, env.get("LI_LEG_ID"), idle_timeout)
        finally:
            self.groups.discard(child.pid)

    def _supervise(self, child: subprocess.Popen[bytes], console: Any, timeout: float | None,
                   on_line: Callable[[str], None], stdin_text: str | None,
                   leg: str | None, idle_timeout: float | None) -> tuple[int, bool, bool]:
        import time  # the runner's, once

        heard = [time.monotonic()]  # when the CLI last wrote a line, on either stream (its retries count)

        def noted(sink: Callable[[str], Any]) -> Callable[[str], Any]:
            def note(line: str) -> Any:
                heard[0] = time.monotonic()
                return sink(line)
            return note

        pumps = [_pump(child.stdout, noted(on_line)), _pump(child.stderr, noted(console.write))]
        if stdin_text is not None:
            pumps.append(_feed(child.stdin, stdin_text))
        timed_out = idle = False
        stopped_at: float | None = None
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            now = time.monotonic()
            waits = [w for w in (None if deadline is None else deadline - now,
                                 None if idle_timeout is None else heard[0] + idle_timeout - now) if w is not None]
            try:
                child.wait(timeout=max(0.0, min(waits)) if waits else None)
                break
            except subprocess.TimeoutExpired:
                now = time.monotonic()
                if idle_timeout is not None and now - heard[0] >= idle_timeout:
                    idle = True
                    console.say(IDLE_SAID.format(seconds=idle_timeout))
                elif deadline is None or now < deadline:
                    continue
            timed_out = True
            stopped_at = time.monotonic()
            proctree.kill_group(child.pid, signal.SIGTERM)  # first: the scan below takes a while
            if leg is not None:  # what the leg started outside its group hears it with the group: one grace
                proctree.signal_all(self.groups.leg_strays(leg), signal.SIGTERM)
            proctree.stop_group(child, max(0.0, KILL_GRACE - (time.monotonic() - stopped_at)))
        self.groups.discard(child.pid)  # what it left running is stopped before its output is awaited
        grace = KILL_GRACE if stopped_at is None else max(0.0, KILL_GRACE - (time.monotonic() - stopped_at))
        self.groups.stop_strays(console.say, leg=leg, grace=grace)
        for pump in pumps:
            pump.join(PUMP_JOIN)
        return child.returncode, timed_out, idle


def _pump(stream: IO[bytes] | None, sink: Callable[[str], Any]) -> threading.Thread:
    def drain() -> None:
        assert stream is not None
        with stream:
            for raw in iter(stream.readline, b""):
                sink(raw.decode("utf-8", errors="replace"))

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    return thread


def _feed(stream: IO[bytes] | None, text: str) -> threading.Thread:
    def write() -> None:
        assert stream is not None
        try:
            with stream:
                stream.write(text.encode("utf-8", "surrogateescape"))
        except (BrokenPipeError, OSError):
            pass

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


class ShProvider:
    """`/bin/sh /dev/fd/N` in the run's cwd, N an anonymous file holding the instruction as a script.

    Its stdout is the answer (`response.md`). The script is on no command line and in no named
    file: a memfd (an unlinked 0600 file where there is none), which only this user's processes
    can reach, through /proc/PID/fd. Its stdin stays /dev/null.
    """

    name = "sh"
    shell = "/bin/sh"

    def __init__(self, child: ChildRun) -> None:
        self.child = child

    def available(self) -> bool:
        return os.access(self.shell, os.X_OK)

    @classmethod
    def command(cls, model: str | None, env: Mapping[str, str], script_fd: int = 2**31 - 1) -> list[str]:
        """The argv: the shell and the script's descriptor (by default the widest one, for sizing)."""
        return [cls.shell, f"/dev/fd/{script_fd}"]

    def run(self, instruction: str, model: str | None, cwd: str, env: Mapping[str, str],
            console: Any, timeout: float | None, extra: Sequence[str] = (),
            idle_timeout: float | None = None) -> ProviderResult:
        """Shell work has no idle watchdog (`idle_timeout` is for agent CLIs)."""
        lines: list[str] = []

        def tee(line: str) -> None:
            lines.append(line)
            console.write(line)

        try:
            launch = self.launch(instruction, model, env, extra)
        except OSError as exc:
            console.say(f"li runner: could not hand the instruction to {self.shell}: {exc}\n")
            return ProviderResult(exit_code=127)
        try:
            code, timed_out, _ = self.child(launch.argv, cwd, env, console, timeout, tee, pass_fds=launch.keeps)
        finally:
            close_all(launch.keeps)
        return self.conclude(lines, code, timed_out)

    def launch(self, instruction: str, model: str | None, env: Mapping[str, str],
               extra: Sequence[str] = ()) -> LegLaunch:
        """The argv and the script's descriptor (the caller closes it: `close_all`)."""
        script = script_descriptor(instruction)
        return LegLaunch(argv=tuple(self.command(model, env, script)), keeps=(Held(script),))

    def conclude(self, lines: Sequence[str], exit_code: int, timed_out: bool, idle: bool = False) -> ProviderResult:
        """Its stdout is the answer."""
        return ProviderResult(exit_code=exit_code, answer="".join(lines) or None, timed_out=timed_out)


def close_all(fds: Sequence[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def script_descriptor(text: str, name: str = "li-instruction") -> int:
    """A non-inheritable descriptor of an anonymous file holding `text`, positioned at its start."""
    data = text.encode("utf-8", "surrogateescape")
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create(name, os.MFD_CLOEXEC)
    else:  # no memfd: an unlinked file only this user can open
        fd, path = tempfile.mkstemp(prefix=f"{name}-")
        os.unlink(path)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


class AgentProvider:
    """One agent CLI as a provider: find its executable, run it with the prompt on stdin, judge its stream.

    Everything that differs between the CLIs (argv, what the stream means, what an exit status
    says) is the CLI's own module in `domain/agents/`; this is the same for all of them.
    """

    def __init__(self, child: ChildRun, cli: AgentCli) -> None:
        self.child = child
        self.cli = cli
        self.name = cli.name

    def available(self) -> bool:
        return shutil.which(self.cli.executable) is not None

    def command(self, model: str | None, env: Mapping[str, str], extra: Sequence[str] = ()) -> list[str]:
        """The argv, never the prompt: the executable on the run's PATH, its headless flags, `extra`."""
        return agent_command(self.cli, model, env, extra)

    def run(self, instruction: str, model: str | None, cwd: str, env: Mapping[str, str],
            console: Any, timeout: float | None, extra: Sequence[str] = (),
            idle_timeout: float | None = None) -> ProviderResult:
        lines: list[str] = []

        def keep(line: str) -> None:
            lines.append(line)
            console.write(line)

        launch = self.launch(instruction, model, env, extra)
        code, timed_out, idle = self.child(launch.argv, cwd, env, console, timeout, keep, launch.stdin_text,
                                           idle_timeout=idle_timeout)
        return self.conclude(lines, code, timed_out, idle)

    def launch(self, instruction: str, model: str | None, env: Mapping[str, str],
               extra: Sequence[str] = ()) -> LegLaunch:
        """The argv (never the prompt) and the prompt for its stdin."""
        return LegLaunch(argv=tuple(self.command(model, env, extra)), stdin_text=instruction)

    def conclude(self, lines: Sequence[str], exit_code: int, timed_out: bool, idle: bool = False) -> ProviderResult:
        """The stream parsed and judged with the exit status: never a success unless the stream
        delivered an answer and neither it nor the exit flagged an error; a failure carries its
        reason (`domain.transcript.end_reason`; `idle_timeout` when the idle watchdog stopped it)
        and no answer. The stream's readers are imported here: a submit sizes a leg's argv with this
        module (`command_line`) and reads no stream."""
        from lionrun.domain.transcript import end_reason, outcome

        found = outcome(self.name, list(lines))
        reason = IDLE_TIMEOUT if idle else end_reason(self.name, found, exit_code)
        return ProviderResult(exit_code=exit_code, answer=found.answer if reason is None else None,
                              is_error=reason is not None, timed_out=timed_out, usage=found.usage,
                              reason_code=reason, retry_at=found.retry_at, retry_after=found.retry_after,
                              session_id=found.session_id)

    def parse(self, lines: list[str]) -> ProviderResult:
        """The stream alone, as if the CLI exited 0 once it ended (1 when it did not)."""
        from lionrun.domain.transcript import outcome

        return self.conclude(lines, 0 if outcome(self.name, lines).ended else 1, False)


def agent_command(cli: AgentCli, model: str | None, env: Mapping[str, str], extra: Sequence[str] = ()) -> list[str]:
    """A CLI's argv (never the prompt): its executable as the run's PATH finds it, its headless flags, `extra`."""
    return [shutil.which(cli.executable, path=env.get("PATH")) or cli.executable, *cli.arguments(model, extra)]


def command_line(provider: str, model: str | None, env: Mapping[str, str], extra: Sequence[str] = ()) -> list[str]:
    """The argv a provider execs for a leg (never the prompt): what a submit counts against exec's limits."""
    if provider == ShProvider.name:
        return ShProvider.command(model, env)
    return agent_command(agent(provider), model, env, extra)


class Providers(Mapping[str, Provider]):
    """The provider registry: every model spec's provider name to its adapter (sh, then each agent
    CLI), each made when first asked for, so a submit imports the modules of the CLIs its request
    names and no other (`domain.agents`)."""

    def __init__(self, groups: ChildGroups) -> None:
        self._child = ChildRun(groups)
        self._made: dict[str, Provider] = {}

    def __getitem__(self, name: str) -> Provider:
        found = self._made.get(name)
        if found is None:
            if name == ShProvider.name:
                found = ShProvider(self._child)
            elif is_agent(name):
                found = AgentProvider(self._child, agent(name))
            else:
                raise KeyError(name)
            self._made[name] = found
        return found

    def __iter__(self) -> Iterator[str]:
        return iter((ShProvider.name, *AGENT_NAMES))

    def __len__(self) -> int:
        return 1 + len(AGENT_NAMES)


def default_providers(groups: ChildGroups) -> Providers:
    return Providers(groups)
