"""The wire contract's verb -> schema table names every published schema, and the
schema each verb's answer is checked against in lionrun's own tests (`validate.verb_of`)."""

from __future__ import annotations

import os
import re

from lionrun.domain.wire import VERBS
from tests.contract.validate import verb_of
from tests.support import REPO


def table() -> list[tuple[list[str], str]]:
    with open(os.path.join(REPO, "docs", "wire-contract.md"), encoding="utf-8") as handle:
        text = handle.read()
    found = re.search(r"<!-- verb-schemas -->\n(.*?)<!-- /verb-schemas -->", text, re.S)
    assert found
    rows = []
    for line in found.group(1).strip().splitlines()[2:]:
        verbs, schema = (cell.strip() for cell in line.strip("|").split("|"))
        rows.append((re.findall(r"`li ([^`]+)`", verbs), schema.strip("`").removesuffix(".json")))
    return rows


def test_every_published_data_schema_has_its_row() -> None:
    assert sorted(schema for _, schema in table()) == sorted(VERBS)


def test_each_verb_is_checked_against_the_schema_its_row_names() -> None:
    for verbs, schema in table():
        for verb in verbs:
            argv = ["handshake", "--help"] if verb == "[COMMAND] --help" else verb.split()
            assert verb_of(argv) == schema, (verb, schema)
