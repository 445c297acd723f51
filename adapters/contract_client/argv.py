"""How the client spells a call: verb words, `--name=value` options, the optional model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def verb_words(args: Sequence[str]) -> int:
    """How many leading words name the verb (`--machine` goes right after them)."""
    return 2 if args and args[0] in ("job", "orchestrate") else 1


def option_words(values: Mapping[str, object]) -> list[str]:
    """`{"tail_chars": 5}` -> `["--tail-chars=5"]`; None is omitted; lists are comma-joined.

    Values are li's to judge, as any other caller input is: NaN and infinities travel as
    `nan`/`inf`, which li clamps (wait) or refuses as invalid_input (everything else).
    """
    words: list[str] = []
    for name, value in values.items():
        if value is None:
            continue
        text = ",".join(map(word, value)) if isinstance(value, (list, tuple)) else word(value)
        words.append(f"--{name.replace('_', '-')}={text}")
    return words


def repeated_words(name: str, values: object) -> list[str]:
    """`("provider_arg", ["--max-turns", "3"])` -> `["--provider-arg=--max-turns", "--provider-arg=3"]`:
    one `--name=value` per value, for a repeatable option (the `=` keeps a value that starts with a
    dash a value). None is omitted; a lone string is one value."""
    if values is None:
        return []
    items = [values] if isinstance(values, str) else list(values) if isinstance(values, (list, tuple)) else [values]
    return [f"--{name.replace('_', '-')}={word(value)}" for value in items]


def word(value: object) -> str:
    """One option value as text; an int too long to print is out of every bound, so ±inf."""
    try:
        return str(value)
    except ValueError:  # int beyond sys.get_int_max_str_digits()
        return "inf" if isinstance(value, int) and value > 0 else "-inf"


def present(model: str | None) -> list[str]:
    return [] if model is None else [model]
