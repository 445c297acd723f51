"""`python -m lionrun.entrypoints.notice RUN_ID`: the detached sender of a reap winner's terminal notice."""

from __future__ import annotations

import sys

from lionrun.domain.run import is_run_id
from lionrun.entrypoints.container import get_container


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not is_run_id(args[0]):
        print("usage: python -m lionrun.entrypoints.notice RUN_ID", file=sys.stderr)
        return 2
    get_container().notices.notices().deliver_claimed(args[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
