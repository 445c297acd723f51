"""A stand-in `li` that answers every machine call with a contract_version 2 envelope."""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    data = {
        "contract_version": 2,
        "min_supported_version": 2,
        "implementation": "fake-li-v2",
        "implementation_version": "2.0.0",
        "module": __file__,
        "argv": argv,
        "run_id": "20260101T000000-abcdef",
        "status": "completed",
        "terminal": True,
        "outcome": "succeeded",
        "runs": [],
    }
    print(json.dumps({"ok": True, "contract_version": 2, "data": data, "error": None}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
