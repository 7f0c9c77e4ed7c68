"""docs/guarantees.md names only tests that exist, and every test file it stands on is cited."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "guarantees.md"
CITED = re.compile(r"(?:tests/)?(test_\w+\.py)::(\w+)")


def test_every_test_the_guarantees_page_cites_exists() -> None:
    cites = CITED.findall(PAGE.read_text())
    assert len(cites) > 40
    missing = []
    for file, name in cites:
        path = ROOT / "tests" / file
        if not path.exists() or not re.search(rf"^def {name}\(", path.read_text(), re.M):
            missing.append(f"{file}::{name}")
    assert not missing, f"docs/guarantees.md cites tests that do not exist: {missing}"


def test_every_test_of_the_guarantee_files_is_cited() -> None:
    cited = {(f, n) for f, n in CITED.findall(PAGE.read_text())}
    uncited = []
    for file in ("test_faults.py", "test_bad_input.py", "test_isolation.py", "test_checkpoints.py", "test_soak.py"):
        for name in re.findall(r"^def (test_\w+)\(", (ROOT / "tests" / file).read_text(), re.M):
            if (file, name) not in cited:
                uncited.append(f"{file}::{name}")
    assert not uncited, f"tests that docs/guarantees.md does not cite: {uncited}"
