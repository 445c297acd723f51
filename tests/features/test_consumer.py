"""ADR-0106 consumer obligations, executable: features/consumer.feature."""

from pytest_bdd import scenarios

scenarios("consumer.feature")
