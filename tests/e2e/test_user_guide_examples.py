"""Every example in docs/user-guide.md runs, and exits as the guide says it does.

An example is a whole ```sh/```bash block (run as one bash script), the `$ ...` commands of a
```console block (one script: `$ RUN=$(li ...)` then `$ li job kill "$RUN"` share the shell), or an
inline `li ...` span of the prose. Each runs in bash against a temp LI_HOME and HOME, in a git
repository, with the fake agent CLIs (tests/fakes/bin) first on PATH, after the test has made the
runs the guide names: its run ids (`20261202T105327-c3406e`, `c3406e`, `406e`, ...) and `RUN` are
replaced by ids of those runs. Every script runs under `set -eo pipefail` and must exit 0, unless
EXPECTED_EXIT below says otherwise (with the guide's reason); never a usage error, an internal error
or a traceback. A block whose `RUN=$(...)` line ran must have left a run id in `$RUN`."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from dataclasses import dataclass

import pytest

from tests.support import REPO, li_bin, machine

GUIDE = os.path.join(REPO, "docs", "user-guide.md")
FAKES = os.path.join(REPO, "tests", "fakes", "bin")
RUN_ID = re.compile(r"\b\d{8}T\d{6}-[0-9a-f]{6}\b")

# Examples that exit non-zero, by their first command, with the status and the guide's reason.
EXPECTED_EXIT = {
    # "an unknown model ... refused": the guide shows li's one-line refusal.
    "li agent echo hi": 2,
    # "`li agent sh 'exit 3'`": the run ends failed, and a foreground run that failed exits 1 (Exit codes).
    "li agent sh 'exit 3'": 1,
}
# "the reader of stdout went away (`li job list | head -1`)": 141, said quietly. Whether `head` goes
# away before li has written its last row is a race of the two processes (li's table may fit in the
# pipe before `head` exits, and then li ends 0); either way the reader got the header, and li said
# nothing on stderr. Exit 141 itself is proven without the race in tests/e2e/test_unwritable_stdout.py.
READER_LEAVES = {"li job list | head -1": {0, 141}}

# The guide's run ids and what the test makes for each (the same id in full or short form).
COUNTER, FANOUT, OTHER = "counter", "fanout", "other"
GUIDE_IDS = {"20261202T105327-c3406e": COUNTER, "20261202T105332-a9f93f": FANOUT,
             "20261202T105323-239c90": OTHER}
# `RUN` names the counter run, except where the text around the example says what RUN is.
RUN_IS = {"li job diff RUN": "worktree", "li job apply RUN": "worktree", "li job reply RUN 'now add tests'": "claude",
          "li job kill RUN": "long",
          # a fanout whose legs each worked in a worktree of their own
          "li job diff RUN --leg leg-2": "legs", "li job apply RUN --leg leg-2": "legs"}
# Examples that change the runs they name get runs of their own, made just before (kind: argv).
OWN_RUNS = {
    "li job rm 406e 20261202T105323-239c90": {COUNTER: ("sh", "echo x"), OTHER: ("sh", "echo y")},
    "li job kill RUN": {"long": ("--label", "long", "sh", "sleep 300")},
    # "a selection that names no run is refused": give it a run that is running and will succeed
    "li job wait --status running": {"short": ("sh", "sleep 1")},
    # the fanouts section waits on and reads the fanout it makes (an example above prunes the store)
    "li orchestrate fanout --detach --legs 3 sh 'echo \"leg $LI_RUN_ID\"; sleep 1'": {
        FANOUT: ("orchestrate", "fanout", "--detach", "--legs", "3", "sh", 'echo "leg $LI_RUN_ID"; sleep 1')},
    # `li job retry @last` follows the retry to its end: `@last` must be a run that ends, in a queue
    # that runs, whatever example this worker ran before (a `sleep 300`, a paused queue's run)
    "li job retry @last": {"retried": ("sh", "echo again")},
}
# What runs after an example in the same script, to leave the place as it was: xdist may give the
# pause and the resume of a queue to different workers, and a paused queue holds its runs forever.
UNDO = {"li queue pause shells": "li queue resume shells"}
ARTIFACT = "tick.txt"  # the counter run's artifact, for `--artifact NAME`
FLOW = "steps:\n  - id: hello\n    model: sh\n    prompt: echo hello\n"
PLACEHOLDERS = {"...", "RUN...", "PATH", "N", "S", "L", "M", "WHEN", "SECONDS", "CMD", "TEXT", "DIR", "KIND",
                "RUN_ID", "MODEL", "ARG", "MODE"}


@dataclass(frozen=True)
class Example:
    line: int
    commands: tuple[str, ...]  # shell commands, run in order in one bash
    source: str  # "sh", "console" or "prose"

    @property
    def first(self) -> str:
        return self.commands[0].strip()

    def __str__(self) -> str:
        return f"l{self.line}: {self.first[:60]}"


def guide_text() -> str:
    with open(GUIDE, encoding="utf-8") as handle:
        return handle.read()


def examples() -> list[Example]:
    found: list[Example] = []
    lines = guide_text().split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("```"):
            kind, start, body = line[3:].strip(), index + 1, []
            index += 1
            while not lines[index].startswith("```"):
                body.append(lines[index])
                index += 1
            if kind in ("sh", "bash") and any(re.match(r"(\S+=\$\()?li |eval \"\$\(li ", b) for b in body):
                found.append(Example(start, ("\n".join(body),), "sh"))
            elif kind == "console":
                commands = tuple(b[2:] for b in body if b.startswith("$ "))
                if any(re.match(r"(\S+=\$\()?li ", c) for c in commands):
                    found.append(Example(start, commands, "console"))
        else:
            for span in re.findall(r"`(li [^`]+)`", line):
                span = span.replace("\\|", "|")
                if not mention(span):
                    found.append(Example(index + 1, (span,), "prose"))
        index += 1
    return found


COMMAND_WORDS = {"li", "job", "agent", "orchestrate", "flow", "fanout", "status", "output", "list", "kill", "wait",
                 "prune", "retry", "rm", "diff", "apply", "reply", "completion", "doctor", "mcp", "handshake", "serve",
                 "approve", "deny"}
NEEDS_ARGUMENTS = {"agent", "orchestrate", "flow", "fanout", "status", "output", "kill", "wait", "retry", "rm", "diff",
                   "apply", "reply", "completion", "mcp", "serve", "approve", "deny"}


def mention(span: str) -> bool:
    """An inline span that names a command (`li job output --follow`) rather than showing a whole one."""
    words = span.split()
    rest = [w for w in words if w not in COMMAND_WORDS and not w.startswith("-")]
    if words[-1] in ("sh", "claude", "codex", "gemini"):  # a model without its prompt
        return True
    return not rest and words[-1] in NEEDS_ARGUMENTS | {"--follow", "--detach", "--raw"}


def runnable(example: Example) -> bool:
    """Whole shell words with no placeholder a person fills in (`<...>`, `...`, `RUN...`, `PATH`):
    a block with one is the install (README's test covers it) or zsh's own lines."""
    for command in example.commands:
        try:
            words = shlex.split(command.replace("<run id>", "RUNID"), comments=True)
        except ValueError:
            return False
        if any(word.startswith("<") or word in PLACEHOLDERS or "…" in word for word in words):
            return False
        if "autoload" in words or "compinit" in words:  # zsh's own lines (~/.zshrc), not bash's
            return False
    return True


EXAMPLES = examples()
RUNNABLE = [e for e in EXAMPLES if runnable(e)]


def test_the_guide_has_examples_to_run() -> None:
    assert len(EXAMPLES) > 30
    assert len(RUNNABLE) > 40
    firsts = [e.first for e in RUNNABLE]
    assert "RUN=$(li agent --detach sh 'sleep 2; echo done' 2>/dev/null)" in firsts
    assert any(e.first.startswith("RUN=$(li agent --detach --label long") for e in RUNNABLE)
    assert any(e.first.startswith("RUN=$(li agent --detach sh 'date >") for e in RUNNABLE)
    assert 'eval "$(li completion bash)"' in firsts
    # every table entry names an example that still exists
    assert set(EXPECTED_EXIT) <= set(firsts), set(EXPECTED_EXIT) - set(firsts)
    assert set(RUN_IS) <= set(firsts), set(RUN_IS) - set(firsts)
    assert set(OWN_RUNS) <= set(firsts), set(OWN_RUNS) - set(firsts)
    assert set(UNDO) <= set(firsts), set(UNDO) - set(firsts)
    assert set(READER_LEAVES) <= set(firsts), set(READER_LEAVES) - set(firsts)


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("guide")
    home, li_home = root / "home", root / "li"
    home.mkdir()
    (home / ".zfunc").mkdir()
    (home / ".config" / "fish" / "completions").mkdir(parents=True)
    env = {**os.environ, "HOME": str(home), "LI_HOME": str(li_home), "LI_KILL_GRACE": "0.2",
           "PATH": f"{FAKES}:{os.path.dirname(li_bin())}:{os.environ['PATH']}",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for name in ("LI_NOTIFY_COMMAND", "NO_COLOR", "LI_BIN"):
        env.pop(name, None)
    work = root / "work"
    work.mkdir()
    (work / "flow.yaml").write_text(guide_flow() or FLOW)
    (work / "README.md").write_text("a project\n")
    (work / "app.py").write_text("print('hi')\n")
    subprocess.run("git init -q && git add -A && git commit -qm init", shell=True, cwd=work, env=env, check=True)

    def submit(*argv: str) -> str:
        return str(machine("agent", "--detach", *argv, home=str(li_home), cwd=str(work), env=env).data["run_id"])

    runs = {
        OTHER: submit("sh", "echo other"),
        COUNTER: submit("--label", "counter", "sh", f'echo tick; echo five > "$LI_ARTIFACTS_DIR/{ARTIFACT}"'),
        "worktree": submit("--worktree", "sh", "echo changed > app.py"),
        "claude": submit("--worktree", "claude", "say hi"),
        "nightly": submit("--label", "nightly", "sh", "echo nightly"),
    }
    runs[FANOUT] = str(machine("orchestrate", "fanout", "--detach", "--legs", "2", "sh", "echo x", home=str(li_home),
                               cwd=str(work), env=env).data["run_id"])
    runs["legs"] = str(machine("orchestrate", "fanout", "--detach", "--legs", "2", "--worktree", "sh",
                               'echo "$LI_LEG_ID" > legs.txt', home=str(li_home), cwd=str(work), env=env).data["run_id"])
    machine("job", "wait", *runs.values(), "--max-wait", "60", home=str(li_home), env=env)
    return {"cwd": str(work), **env, **{f"ID_{k}": v for k, v in runs.items()}}


def guide_flow() -> str | None:
    """The guide's own flow.yaml (its ```yaml block headed `# flow.yaml`)."""
    text = guide_text()
    match = re.search(r"```yaml\n# flow\.yaml\n(.*?)```", text, re.S)
    return match.group(1) if match else None


def substituted(example: Example, place: dict[str, str]) -> str:
    script = "\n".join(example.commands)
    for guide_id, kind in GUIDE_IDS.items():
        real = place[f"ID_{kind}"]
        script = script.replace(guide_id, real)
        for digits in (6, 4):
            script = re.sub(rf"(?<![0-9a-fA-F-]){guide_id[-digits:]}\b", real[-digits:], script)
    if "RUN=$(" not in script:
        run = place[f"ID_{RUN_IS.get(example.first, COUNTER)}"]
        script = re.sub(r'"\$RUN"|\bRUN\b(?![_=.])', run, script)
    script = re.sub(r"--artifact NAME\b", f"--artifact {ARTIFACT}", script)
    # the newest flow (runs of one second are listed in no particular order: pick by kind)
    latest = ("$(li job list --machine | python3 -c 'import json,sys; "
              "print(next(r[\"run_id\"] for r in json.load(sys.stdin)[\"data\"][\"runs\"] if r[\"kind\"] == \"flow\"))')")
    return script.replace("<run id>", latest)


def fresh(place: dict[str, str], example: Example) -> dict[str, str]:
    """The place with the example's OWN_RUNS made (those that should end, ended)."""
    own = OWN_RUNS.get(example.first)
    if not own:
        return place
    env = {k: v for k, v in place.items() if k != "cwd" and not k.startswith("ID_")}
    if "@last" in example.first:
        # `@last` is the newest id, and ids count seconds: a run made in the second of an earlier
        # example's run could sort before it
        time.sleep(1.0)
    ids = {kind: str(machine(*(argv if argv[0] == "orchestrate" else ("agent", "--detach", *argv)),
                             home=place["LI_HOME"], env=env).data["run_id"])
           for kind, argv in own.items()}
    ending = [run for kind, run in ids.items() if kind not in ("long", "short")]
    if ending:
        machine("job", "wait", *ending, "--max-wait", "30", home=place["LI_HOME"], env=env)
    return {**place, **{f"ID_{k}": v for k, v in ids.items()}}


@pytest.mark.parametrize("example", RUNNABLE, ids=str)
def test_each_example_runs(example: Example, place: dict[str, str]) -> None:
    place = fresh(place, example)
    env = {k: v for k, v in place.items() if k != "cwd" and not k.startswith("ID_")}
    script = substituted(example, place)
    checks = ""
    if "RUN=$(" in script:
        checks += '\nprintf "RUN=%s\\n" "$RUN" >&2'
    if "completion bash" in script and "eval" in script:
        checks += "\ncomplete -p li >&2"
    if example.first in UNDO:
        checks += f"\n{UNDO[example.first]}"
    proc = subprocess.run(["bash", "-c", f"set -eo pipefail\n{script}{checks}"], cwd=place["cwd"], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    said = proc.stdout + proc.stderr
    assert "Traceback" not in said and "internal error" not in said, (script, said)
    if example.first in READER_LEAVES:
        assert proc.returncode in READER_LEAVES[example.first], (script, proc.returncode, said)
        assert proc.stdout.startswith("RUN ID") and proc.stdout.count("\n") == 1 and proc.stderr == "", said
        return
    expected = EXPECTED_EXIT.get(example.first, 0)
    assert proc.returncode == expected, (script, proc.returncode, said)
    if "RUN=$(" in script:
        assert RUN_ID.search(proc.stderr.rsplit("RUN=", 1)[-1]), (script, said)
    if "complete -p li" in checks:
        assert "complete" in proc.stderr and " li" in proc.stderr, (script, said)
