"""`li orchestrate flow|fanout`: submit a DAG of agents or parallel legs (D5)."""

from __future__ import annotations

from argparse import Namespace
from typing import TYPE_CHECKING, Any

from lionrun.entrypoints.verb_table import summary
from lionrun.entrypoints.verbs._common import this
from lionrun.entrypoints.verbs._submit import (
    add_submit_options,
    add_view_options,
    common_options,
    prompt_and_model,
    read_prompt_file,
    refuse_command_as_model,
    submit,
    submit_for_person,
    with_agent_options,
)

if TYPE_CHECKING:
    from lionrun.domain.request import RunRequest


def register(sub: Any, words: list[str] | None = None) -> None:
    parser = sub.add_parser("orchestrate", help=summary("orchestrate"))
    kinds = parser.add_subparsers(dest="mode", metavar="MODE")
    flow = kinds.add_parser("flow", help="run a YAML or JSON DAG of steps")
    flow.add_argument("spec", metavar="SPEC", help="path of the flow spec (YAML or JSON), or - for stdin")
    add_submit_options(flow)
    add_view_options(flow)
    flow.set_defaults(verb=this(__name__))
    fanout = kinds.add_parser("fanout", help="run N legs of one prompt in parallel")
    fanout.add_argument("words", nargs="*", metavar="[MODEL] PROMPT")
    fanout.add_argument("--prompt", help="the prompt text (instead of the positional)")
    fanout.add_argument("--prompt-file", help="read the prompt from PATH, or stdin with -")
    fanout.add_argument("--legs", help="how many legs (default 2)")
    fanout.add_argument("--models", help="comma-separated models, one leg each")
    fanout.add_argument("--synthesize", metavar="MODEL", help="a final leg that merges the answers")
    add_submit_options(fanout)
    add_view_options(fanout)
    fanout.set_defaults(verb=this(__name__))
    parser.set_defaults(verb=this(__name__))


def run(args: Namespace) -> dict[str, Any]:
    return submit(orchestrate_request(args), args).to_wire()


def human(args: Namespace) -> int:
    if getattr(args, "mode", None) is None:  # bare `li orchestrate`: its help
        from lionrun.entrypoints.verbs._common import print_help

        if print_help(args, "orchestrate") == 0:
            return 0
    return submit_for_person(orchestrate_request(args), args)


def orchestrate_request(args: Namespace) -> RunRequest:
    from lionrun.domain.request import invalid

    mode = getattr(args, "mode", None)
    if mode == "flow":
        return flow_request(args)
    if mode == "fanout":
        return fanout_request(args)
    raise invalid("choose a mode: li orchestrate flow SPEC, or li orchestrate fanout [MODEL] PROMPT")


def flow_request(args: Namespace) -> RunRequest:
    """The spec is read and fully validated here; its text becomes the run's instruction.txt."""
    from lionrun.domain.flow import describe, parse_flow
    from lionrun.domain.request import RunRequest, check_prompt

    common = common_options(args)
    text = check_prompt(read_prompt_file(args.spec, "flow spec"), "flow spec")
    spec = decode_spec(text, args.spec)
    legs = parse_flow(spec)
    common["label"] = common["label"] or describe(spec)
    return with_agent_options(RunRequest(kind="flow", instruction=text, legs=legs, **common), args)


def decode_spec(text: str, path: str) -> object:
    """YAML (of which JSON is a subset); a syntax error is `invalid_input`."""
    import yaml

    from lionrun.domain.request import invalid

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise invalid(f"the flow spec {path!r} is not valid YAML or JSON: {exc}", path=path) from None
    except RecursionError:
        raise invalid(f"the flow spec {path!r} is nested too deeply to be a flow", path=path) from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. an impossible date YAML resolves
        raise invalid(f"the flow spec {path!r} holds a value that cannot be read: {exc}", path=path) from None


def fanout_request(args: Namespace) -> RunRequest:
    """N legs of one model, or one leg per `--models` entry, and optionally a synthesis leg."""
    from lionrun.domain.request import (
        DEFAULT_PROVIDER,
        Leg,
        RunRequest,
        check_prompt,
        invalid,
        parse_legs,
        parse_model,
        parse_models,
        split_words,
    )

    common = common_options(args)
    model_text, prompt = prompt_and_model(args, split_words)
    refuse_command_as_model(model_text, args.words, "li orchestrate fanout")
    if args.models is not None and (args.legs is not None or model_text is not None):
        raise invalid("--models names every leg's model; do not also give --legs or a MODEL")
    models = (parse_models(args.models) if args.models is not None
              else [parse_model(model_text or DEFAULT_PROVIDER)] * parse_legs(args.legs))
    synthesize = parse_model(args.synthesize) if args.synthesize is not None else None
    if synthesize is not None and synthesize.provider == "sh":
        from lionrun.domain.agents import NAMES

        raise invalid(f"--synthesize needs an agent model ({', '.join(NAMES)}); sh cannot merge answers")
    legs = tuple(Leg(f"leg-{n}", model) for n, model in enumerate(models, start=1))
    return with_agent_options(RunRequest(kind="fanout", instruction=check_prompt(prompt), legs=legs,
                                         synthesize=synthesize, **common), args)

