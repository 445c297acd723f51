"""Fixtures of the integration tests that need a real server."""

from tests.pg import pg_dsn  # noqa: F401  (a fixture: a fresh lionrun database on the test server)
