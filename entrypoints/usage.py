"""What the parser answers instead of a namespace: a usage error or the help text.

Apart from entrypoints/cli.py (which raises them) so that the dispatcher can catch them without
importing argparse: a request that needs no parser (`li handshake`) never loads it.
"""

from __future__ import annotations


class UsageError(Exception):
    """Bad arguments: `invalid_input` under --machine, exit 2 for a person."""

    def __init__(self, message: str, usage: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.usage = usage


class HelpRequested(Exception):
    """`--help` was asked for; the text is the answer."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text
