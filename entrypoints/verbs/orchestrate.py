"""`li orchestrate flow|fanout`: submit a DAG of agents or parallel legs (D5)."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

from entrypoints.verbs._common import this, unbuilt
from entrypoints.verbs.agent import add_submit_options


def register(sub: Any) -> None:
    parser = sub.add_parser("orchestrate", help="run a flow (DAG) or a fanout of agents")
    kinds = parser.add_subparsers(dest="mode", metavar="MODE")
    flow = kinds.add_parser("flow", help="run a YAML or JSON DAG of steps")
    flow.add_argument("spec", metavar="SPEC", help="path of the flow spec (YAML or JSON)")
    add_submit_options(flow)
    flow.set_defaults(verb=this(__name__))
    fanout = kinds.add_parser("fanout", help="run N legs of one prompt in parallel")
    fanout.add_argument("words", nargs="*", metavar="[MODEL] PROMPT")
    fanout.add_argument("--prompt", help="the prompt text (instead of the positional)")
    fanout.add_argument("--prompt-file", help="read the prompt from PATH, or stdin with -")
    fanout.add_argument("--legs", help="how many legs (default 2)")
    fanout.add_argument("--models", help="comma-separated models, one leg each")
    fanout.add_argument("--synthesize", metavar="MODEL", help="a final leg that merges the answers")
    add_submit_options(fanout)
    fanout.set_defaults(verb=this(__name__))
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    unbuilt("li orchestrate")
