"""Legs inside one run: a DAG scheduler (flow, fanout + synthesis, agent) on threads."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from lionrun.application.ports import ProviderResult
from lionrun.domain.flow import render
from lionrun.domain.request import Leg, RunRequest

SYNTHESIS = "synthesis"
MAX_PARALLEL = 32


@dataclass(frozen=True)
class LegOutcome:
    """What one leg did: its status, the provider's result, its artifact and its wall time.

    `artifact_error` says why an answer the leg did give could not be written as its artifact.
    """

    leg: Leg
    status: str  # completed | failed | timed_out | cancelled | skipped
    reason_code: str | None = None
    result: ProviderResult | None = None
    artifact: str | None = None
    wall_seconds: float = 0.0
    artifact_error: str | None = None

    @property
    def answer(self) -> str | None:
        return self.result.answer if self.result is not None else None

    @property
    def exit_code(self) -> int | None:
        """The provider's exit code; None when the leg never ran."""
        return self.result.exit_code if self.result is not None else None


RunLeg = Callable[[Leg, str], LegOutcome]


def plan(request: RunRequest) -> tuple[Leg, ...]:
    """The legs of a run in dependency order; fanout's synthesis leg waits for every other leg."""
    legs = request.legs
    if request.synthesize is None:
        return legs
    return (*legs, Leg(SYNTHESIS, request.synthesize, None, tuple(leg.id for leg in legs)))


def artifact_name(kind: str, leg_id: str) -> str:
    """Where a leg's answer goes under `artifacts/`; a run's final answer is `response.md`."""
    if kind == "agent" or leg_id == SYNTHESIS:
        return "response.md"
    return f"step-{leg_id}.md" if kind == "flow" else f"{leg_id}.md"


def prompt_for(request: RunRequest, leg: Leg, answers: Mapping[str, str | None]) -> str:
    """The text a leg is given: its own prompt with upstream answers, or the instruction."""
    if leg.id == SYNTHESIS and request.synthesize is not None:
        return synthesis_prompt(request.instruction, request.legs, answers)
    return request.instruction if leg.prompt is None else render(leg.prompt, answers)


def synthesis_prompt(instruction: str, legs: Sequence[Leg], answers: Mapping[str, str | None]) -> str:
    parts = [f"Several agents answered the same task independently. Merge their answers into one "
             f"best answer.\n\n## Task\n\n{instruction}\n"]
    for leg in legs:
        parts.append(f"\n## Answer of {leg.id} ({leg.model.text})\n\n{answers.get(leg.id) or '(no answer)'}\n")
    return "".join(parts)


def run_dag(legs: Sequence[Leg], run_leg: RunLeg, prompt: Callable[[Leg, Mapping[str, str | None]], str],
            stopped: Callable[[], bool]) -> list[LegOutcome]:
    """Run every leg once its upstream legs completed, in parallel; skip legs whose upstream did not."""
    outcomes: dict[str, LegOutcome] = {}
    answers: dict[str, str | None] = {}
    running: dict[Future[LegOutcome], Leg] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(len(legs), MAX_PARALLEL))) as pool:
        while len(outcomes) < len(legs):
            ready = _ready(legs, outcomes, running)
            if not ready and not running:
                raise RuntimeError("no leg can start: the legs' dependencies are inconsistent")
            for leg in ready:
                blocked = _blocked(leg, outcomes, stopped())
                if blocked is not None:
                    outcomes[leg.id] = LegOutcome(leg, blocked[0], blocked[1])
                    continue
                running[pool.submit(run_leg, leg, prompt(leg, answers))] = leg
            if not running:
                continue
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                leg = running.pop(future)
                outcomes[leg.id] = _settle(leg, future)
                answers[leg.id] = outcomes[leg.id].answer
    return [outcomes[leg.id] for leg in legs]


def _ready(legs: Sequence[Leg], outcomes: Mapping[str, LegOutcome],
           running: Mapping[Future[LegOutcome], Leg]) -> list[Leg]:
    busy = {leg.id for leg in running.values()}
    return [leg for leg in legs if leg.id not in outcomes and leg.id not in busy
            and all(d in outcomes for d in leg.depends_on)]


def _blocked(leg: Leg, outcomes: Mapping[str, LegOutcome], stopped: bool) -> tuple[str, str] | None:
    if stopped:
        return "cancelled", "cancelled"
    if any(outcomes[d].status != "completed" for d in leg.depends_on):
        return "skipped", "upstream_failed"
    return None


def _settle(leg: Leg, future: Future[LegOutcome]) -> LegOutcome:
    try:
        return future.result()
    except Exception as exc:  # noqa: BLE001 - one leg's bug is that leg's failure, not the run's crash
        return LegOutcome(leg, "failed", "leg_error", ProviderResult(exit_code=1, is_error=True,
                                                                     usage={"error": repr(exc)}))


class LegConsole:
    """A console shared by parallel legs: whole lines, each prefixed with its leg's id; `say`
    writes li's own lines about the leg to the run's li log instead (never into the console)."""

    def __init__(self, console: Any, prefix: str, lock: threading.Lock, li_log: Any) -> None:
        self.console = console
        self.prefix = prefix
        self.lock = lock
        self.li_log = li_log

    def write(self, text: str) -> int:
        return self._put(self.console, text)

    def say(self, text: str) -> int:
        """One of li's own lines (a leg that could not start, went idle, left processes behind):
        best effort, as every li line is: a li log that cannot be written never stops the leg."""
        try:
            return self._put(self.li_log, text)
        except Exception:  # noqa: BLE001 - nowhere left to say it
            return 0

    def _put(self, stream: Any, text: str) -> int:
        lines = text.splitlines(keepends=True) if self.prefix else [text]
        with self.lock:
            for line in lines:
                stream.write(f"{self.prefix}{line}")
            stream.flush()
        return len(text)

    def flush(self) -> None:
        with self.lock:
            self.console.flush()
