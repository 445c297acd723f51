"""`li serve`'s Starlette app: routes parse, call the CLI's own application services, render.

Every rule lives where the CLI's lives (kill: `Killer`; retry and reply: the requests `li job
retry|reply` build; apply: `WorktreeReviews`; remove: `Pruner` under the store's lock); a route
only turns a form into that call and the answer into a page. The guards (token, Host, Origin,
CSRF, CSP) wrap the whole app once (entrypoints/http_guards.py).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import json
import threading
from argparse import Namespace
from collections.abc import AsyncIterator, Callable
from functools import partial
from importlib import resources
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from lionrun.application.board import Changes, Entry, options
from lionrun.domain.board import FILTERS, matches
from lionrun.domain.contract import ContractError, ErrorKind
from lionrun.domain.run import is_run_id
from lionrun.entrypoints.http_guards import Guard, GuardMiddleware
from lionrun.entrypoints.serve import page
from lionrun.entrypoints.serve.hub import Hub

ASSETS = {"serve.js": "text/javascript; charset=utf-8", "serve.css": "text/css; charset=utf-8"}
TRANSCRIPT_BYTES = 256 * 1024  # the console tail a transcript summary is rendered from
ARTIFACT_MAX = 64 * 1024 * 1024
KEEPALIVE_SECONDS = 15.0
STATUS_BY_KIND = {ErrorKind.NOT_FOUND: 404, ErrorKind.INVALID_INPUT: 400, ErrorKind.CONFLICT: 409,
                  ErrorKind.UNAVAILABLE: 503, ErrorKind.INTERNAL: 500}


def build(guard: Guard, hub: Hub) -> GuardMiddleware:
    """The guarded app over `hub`'s board; services come from the composition root, as the CLI's do."""
    routes = [
        Route("/", partial(board, hub=hub, guard=guard)),
        Route("/events", partial(board_events, hub=hub, guard=guard)),
        Route("/assets/{name}", asset),
        Route("/runs/{run_id}", partial(run_view, guard=guard)),
        Route("/runs/{run_id}/events", run_events),
        Route("/runs/{run_id}/artifacts/{name:path}", artifact),
        Route("/runs/{run_id}/confirm/{action}", partial(confirm, guard=guard)),
        Route("/runs/{run_id}/{action}", act, methods=["POST"]),
    ]
    app = Starlette(routes=routes)
    return GuardMiddleware(app, guard)


def chosen_filters(request: Request) -> dict[str, str]:
    return {name: request.query_params.get(name, "")[:200] for name in FILTERS}


async def board(request: Request, hub: Hub, guard: Guard) -> Response:
    chosen = chosen_filters(request)
    version, entries = hub.snapshot()
    shown = [entry for entry in entries if matches(entry.row, chosen)]
    said = request.query_params.get("said", "")[:300]
    return HTMLResponse(page.board_page(shown, chosen, options(entries), version, said, guard.csrf_token))


def sse(event: str, data: object) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def row_event(entry: Entry, chosen: dict[str, str], csrf: str = "") -> bytes:
    if not matches(entry.row, chosen):
        return sse("row", {"id": entry.run_id, "group": None, "html": None})
    return sse("row", {"id": entry.run_id, "group": entry.group, "html": page.row_html(entry, csrf)})


async def board_events(request: Request, hub: Hub, guard: Guard) -> Response:
    """Server-sent events: one `row` event per run that changed (its new line and group), or left."""
    chosen = chosen_filters(request)
    since = request.query_params.get("since", "")
    queue: asyncio.Queue[Changes] = asyncio.Queue()
    hub.listeners.add(queue.put_nowait)

    async def stream() -> AsyncIterator[bytes]:
        try:
            yield b"retry: 1000\n\n"
            version, entries = hub.snapshot()
            if since != str(version):  # changed between the page and this stream: the whole board again
                shown = [entry for entry in entries if matches(entry.row, chosen)]
                yield sse("sync", {"ids": [entry.run_id for entry in shown]})  # any other line has left
                for entry in shown:
                    yield row_event(entry, chosen, guard.csrf_token)
            while True:
                try:
                    found = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield b": keepalive\n\n"
                    continue
                for entry in found.changed:
                    yield row_event(entry, chosen, guard.csrf_token)
                for run_id in found.removed:
                    yield sse("row", {"id": run_id, "group": None, "html": None})
        finally:
            hub.listeners.discard(queue.put_nowait)

    return StreamingResponse(stream(), media_type="text/event-stream")


async def asset(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in ASSETS:
        return Response("not found\n", status_code=404, media_type="text/plain")
    body = resources.files("lionrun.entrypoints.serve").joinpath("assets", name).read_bytes()
    return Response(body, media_type=ASSETS[name])


def run_id_of(request: Request) -> str:
    run_id = str(request.path_params["run_id"])
    if not is_run_id(run_id):
        raise ContractError(ErrorKind.INVALID_INPUT, f"{run_id[:80]!r} is not a run id")
    return run_id


def refused(exc: ContractError) -> Response:
    return HTMLResponse(page.message_page(f"refused ({exc.kind.value})", exc.message),
                        status_code=STATUS_BY_KIND.get(exc.kind, 400))


async def run_view(request: Request, guard: Guard) -> Response:
    try:
        run_id = run_id_of(request)
        html = await run_in_threadpool(render_run, run_id, guard.csrf_token, request.query_params.get("said", ""))
    except ContractError as exc:
        return refused(exc)
    return HTMLResponse(html)


def render_run(run_id: str, csrf: str, said: str) -> str:
    """A run's page from `li job status`, `li job output` and `li job diff`'s own services."""
    from lionrun.application.follow import Follower
    from lionrun.entrypoints.container import get_container

    reads = get_container().reads.reads()
    status = reads.status(run_id)
    output = reads.output(run_id, 0)
    diff = None
    if status.get("terminal") and (status.get("worktree") or status.get("leg_worktrees")):
        with contextlib.suppress(ContractError):
            diff = get_container().upkeep.reviews().diff(run_id)
    store = get_container().core.store()
    transcript = None
    agents = status.get("agents") or {}
    if agents.get("available") and agents.get("value"):
        transcript = transcript_of(store, run_id)
    start = Follower(store, reads.observer, get_container().core.clock()).tail_start(run_id, page.CONSOLE_KEEP_CHARS)
    return page.run_page(status, output, diff, transcript, csrf, said[:300], start)


def transcript_of(files: Any, run_id: str) -> str | None:
    """The transcript of an agent CLI's events (the console's tail), as `li job output` shows a person."""
    from lionrun.domain.transcript import Transcript

    try:
        _, size = files.console_bytes(run_id, 0, 0)
        start = max(0, size - TRANSCRIPT_BYTES)
        data, _ = files.console_bytes(run_id, start, TRANSCRIPT_BYTES)
    except OSError:
        return None
    if start:
        data = data[data.find(b"\n") + 1:]
    transcript = Transcript()
    return transcript.feed(data) + transcript.close()


class Stopped(Exception):
    """The page that followed a console went away."""


class StoppableClock:
    """The system clock whose sleep ends the follow loop once its page has gone."""

    def __init__(self, clock: Any, stop: threading.Event) -> None:
        self.clock, self.stop = clock, stop

    def now(self) -> Any:
        return self.clock.now()

    def monotonic(self) -> float:
        return float(self.clock.monotonic())

    def sleep(self, seconds: float) -> None:
        if self.stop.wait(seconds):
            raise Stopped


async def run_events(request: Request) -> Response:
    """A run's console as it grows (`console` events, text) then its end (`end`, the status fields):
    the follow loop `li job output --follow` uses, in a thread that stops when the page goes."""
    try:
        run_id = run_id_of(request)
        offset = int(request.query_params.get("from", "0") or 0)
    except (ContractError, ValueError):
        return Response("bad request\n", status_code=400, media_type="text/plain")
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue()
    stop = threading.Event()

    def put(item: bytes | None) -> None:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(queue.put_nowait, item)

    threading.Thread(target=follow_into, args=(run_id, max(offset, 0), stop, put), daemon=True,
                     name=f"li-serve-follow-{run_id[-6:]}").start()

    async def stream() -> AsyncIterator[bytes]:
        try:
            yield b"retry: 2000\n\n"
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), KEEPALIVE_SECONDS)
                except TimeoutError:
                    yield b": keepalive\n\n"
                    continue
                if item is None:
                    return
                yield item
        finally:
            stop.set()

    return StreamingResponse(stream(), media_type="text/event-stream")


def follow_into(run_id: str, offset: int, stop: threading.Event, put: Callable[[bytes | None], None]) -> None:
    from lionrun.application.follow import ConsoleChunk, Follower
    from lionrun.entrypoints.container import get_container

    reads = get_container().reads.reads()
    follower = Follower(get_container().core.store(), reads.observer, StoppableClock(get_container().core.clock(), stop), poll_seconds=0.25)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    try:
        for event in follower.follow(run_id, offset):
            if isinstance(event, ConsoleChunk):
                if not event.li:
                    put(sse("console", {"text": decoder.decode(event.data), "end": event.end}))
                continue
            fields = {name: event.observed.derivation.__getattribute__(name)
                      for name in ("status", "terminal", "outcome", "reason_code")}
            put(sse("end", {**fields, "why": event.why}))
    except Stopped:
        pass
    except ContractError as exc:
        put(sse("gone", {"message": exc.message}))
    finally:
        put(None)


async def artifact(request: Request) -> Response:
    """One artifact's bytes, as a download (never rendered: octet-stream, nosniff, attachment);
    only a file the run's artifacts listing names, by `li job output --artifact`'s own rule."""
    try:
        run_id = run_id_of(request)
        name = str(request.path_params["name"])
        body = await run_in_threadpool(artifact_of, run_id, name)
    except ContractError as exc:
        return Response(f"{exc.message}\n", status_code=STATUS_BY_KIND.get(exc.kind, 400), media_type="text/plain")
    filename = quote(name.rsplit("/", 1)[-1])
    return Response(body, media_type="application/octet-stream",
                    headers={"content-disposition": f"attachment; filename*=UTF-8''{filename}"})


def artifact_of(run_id: str, name: str) -> bytes:
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.verbs.job_output import artifact_body

    return artifact_body(get_container().reads.reads().output(run_id, 0), name, ARTIFACT_MAX)


async def confirm(request: Request, guard: Guard) -> Response:
    try:
        run_id = run_id_of(request)
    except ContractError as exc:
        return refused(exc)
    action = request.path_params["action"]
    if action not in page.DESTRUCTIVE:
        return Response("not found\n", status_code=404, media_type="text/plain")
    return HTMLResponse(page.confirm_page(run_id, action, guard.csrf_token))


ACTIONS: dict[str, Callable[[str, Any], tuple[str, str]]] = {}


def action(name: str) -> Callable[[Callable[[str, Any], tuple[str, str]]], Callable[[str, Any], tuple[str, str]]]:
    def register(handler: Callable[[str, Any], tuple[str, str]]) -> Callable[[str, Any], tuple[str, str]]:
        ACTIONS[name] = handler
        return handler
    return register


async def act(request: Request) -> Response:
    """An action's form (the guards checked its Origin and CSRF token): the service, then a redirect."""
    name = request.path_params["action"]
    handler = ACTIONS.get(name)
    if handler is None:
        return Response("not found\n", status_code=404, media_type="text/plain")
    try:
        run_id = run_id_of(request)
        form = await request.form()
        where, said = await run_in_threadpool(handler, run_id, form)
    except ContractError as exc:
        return refused(exc)
    return RedirectResponse(f"{where}?said={quote(said)}", status_code=303)


@action("kill")
def kill(run_id: str, form: Any) -> tuple[str, str]:
    from lionrun.entrypoints.container import get_container

    data = get_container().reads.killer().kill(run_id)
    return f"/runs/{run_id}", f"kill: {data['action']} (status {data['status']})"


@action("retry")
def retry(run_id: str, form: Any) -> tuple[str, str]:
    from lionrun.entrypoints.container import read_settings_again
    from lionrun.entrypoints.verbs._submit import retried_request, submit

    read_settings_again()  # the page lives on; its submits see config.toml as it is now
    handle = submit(retried_request(Namespace(run_id=run_id)))
    return f"/runs/{handle.run_id}", f"retry of {run_id}"


@action("reply")
def reply(run_id: str, form: Any) -> tuple[str, str]:
    from lionrun.entrypoints.container import read_settings_again
    from lionrun.entrypoints.verbs._submit import replied_request, submit

    read_settings_again()  # the page lives on; its submits see config.toml as it is now
    prompt = str(form.get("prompt") or "")
    handle = submit(replied_request(Namespace(run_id=run_id, words=[], prompt=prompt, prompt_file=None)))
    return f"/runs/{handle.run_id}", f"reply to {run_id}"


def answered(run_id: str, form: Any, behavior: str) -> tuple[str, str]:
    """Approve or deny from the page: `li job approve|deny`'s own answer (one rule, one service)."""
    from lionrun.entrypoints.verbs import job_approve, job_deny

    request = str(form.get("request") or "") or None
    if behavior == job_approve.BEHAVIOR:
        data = job_approve.run(Namespace(run_id=run_id, request=request))
    else:
        data = job_deny.run(Namespace(run_id=run_id, request=request, reason=str(form.get("reason") or "") or None))
    done = ", ".join(f"{row['id']} {row['behavior']}" for row in data["approvals"])
    return f"/runs/{run_id}", f"{behavior}: {done}"


@action("approve")
def approve(run_id: str, form: Any) -> tuple[str, str]:
    return answered(run_id, form, "allow")


@action("deny")
def deny(run_id: str, form: Any) -> tuple[str, str]:
    return answered(run_id, form, "deny")


@action("apply")
def apply(run_id: str, form: Any) -> tuple[str, str]:
    """Into the checkout the run was submitted from: the server has no working directory of a person's."""
    from lionrun.entrypoints.container import get_container

    target = get_container().reads.reads().recorded_request(run_id).cwd
    data = get_container().upkeep.reviews().apply(run_id, target, None)
    if not data["applied"]:
        return f"/runs/{run_id}", "apply: the run left no changes; nothing applied"
    return f"/runs/{run_id}", f"applied {len(data['files'])} file(s) to {data['target']} (not committed)"


@action("rm")
def remove(run_id: str, form: Any) -> tuple[str, str]:
    from lionrun.entrypoints.container import get_container
    from lionrun.entrypoints.verbs._common import StoreLocked

    with StoreLocked(get_container().core.home()):
        data = get_container().upkeep.pruner().remove_named([run_id]).to_wire()
    if data["kept"]:
        kept = data["kept"][0]
        raise ContractError(ErrorKind.CONFLICT, f"kept {run_id}: {kept['reason']} ({kept['detail']})")
    return "/", f"removed {run_id}"
