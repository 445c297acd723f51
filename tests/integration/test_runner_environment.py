"""The work's environment carries none of li's ways into the shared store."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import REPO


def test_no_store_url_password_or_libpq_variable_reaches_the_work() -> None:
    env = {**os.environ, "LI_STORE": "postgresql://li:SECRET@db/li", "PGPASSWORD": "SECRET", "PGHOST": "db",
           "PGPASSFILE": "/x/.pgpass", "LI_HOME": "/h", "KEEP_ME": "1", "PYTHONSAFEPATH": "1"}
    code = ("import json; from lionrun.entrypoints.runner import provider_environment; "
            "print(json.dumps(provider_environment('20260101T000000-aaaaaa', '/h/a')))")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO, capture_output=True, text=True, check=True)
    seen = done.stdout
    assert "SECRET" not in seen and '"PGHOST"' not in seen and '"PGPASSFILE"' not in seen and '"LI_STORE"' not in seen
    assert '"KEEP_ME": "1"' in seen and '"LI_RUN_ID": "20260101T000000-aaaaaa"' in seen
    assert '"PYTHONSAFEPATH"' not in seen
