"""The README's promises: the quickstart runs as written, CI runs the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def test_quickstart_runs_as_written(capsys) -> None:  # type: ignore[no-untyped-def]
    code = re.search(r"## Quickstart\n\n```python\n(.*?)```", README, re.S)
    assert code is not None
    exec(compile(code.group(1), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "[tensor(3.8730), tensor(3.8730)]" in out
    assert "('de', tensor(1.), tensor(3.5000))" in out


def test_ci_runs_the_readme_test_command() -> None:
    blocks = re.findall(r"```bash\n(.*?)\n```", README, re.S)
    test_command = next(b for b in blocks if "pytest" in b)
    assert test_command in (ROOT / ".ci" / "run").read_text()
    assert any("python -m scopedmetrics demo" in b for b in blocks)
