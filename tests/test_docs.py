"""The documentation site: it builds with ``mkdocs build --strict``, and its Python blocks run.

Every ```` ```python ```` block of ``docs/*.md`` runs, in page order, in one
namespace per page. A block made of ``>>>`` prompts runs as a doctest (its
printed output is checked); any other block is executed and must not raise.
A block that cannot run here (it needs ``torchrun``, say) is preceded by a
line ``<!-- skip: why -->``.
"""

from __future__ import annotations

import doctest
import importlib.util
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))

_BLOCK = re.compile(
    r"(?P<skip><!--\s*skip:(?P<why>[^>]*)-->[ \t]*\n)?^```python[ \t]*\n(?P<code>.*?)^```[ \t]*$",
    re.M | re.S,
)


def python_blocks(text: str) -> list[tuple[int, str, str | None]]:
    """``(line, code, skip reason or None)`` of every fenced python block."""
    out = []
    for m in _BLOCK.finditer(text):
        line = text.count("\n", 0, m.start("code")) + 1
        why = m.group("why").strip() if m.group("skip") else None
        out.append((line, m.group("code"), why))
    return out


def test_the_block_finder_sees_skips_and_doctests() -> None:
    page = "x\n<!-- skip: needs torchrun -->\n```python\nboom()\n```\n\n```python\n>>> 1 + 1\n2\n```\n"
    blocks = python_blocks(page)
    assert [(b[0], b[2]) for b in blocks] == [(4, "needs torchrun"), (8, None)]
    assert blocks[1][1] == ">>> 1 + 1\n2\n"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_python_blocks_run(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocks = python_blocks(page.read_text())
    globs: dict[str, object] = {"__name__": f"docs.{page.stem}"}
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for line, code, why in blocks:
        if why is not None:
            assert why, f"{page.name}:{line}: a skipped block must say why (<!-- skip: reason -->)"
            continue
        where = f"{page.relative_to(ROOT)}:{line}"
        if code.lstrip().startswith(">>>"):
            test = parser.get_doctest(code, globs, where, str(page), line - 1)
            report = io.StringIO()
            result = runner.run(test, out=report.write, clear_globs=False)
            globs.update(test.globs)  # DocTest runs on a copy: carry its names to the next block
            assert result.failed == 0, f"doctest block at {where} failed:\n{report.getvalue()}"
        else:
            exec(compile(code, where, "exec", dont_inherit=True), globs)  # not this file's __future__ imports
    capsys.readouterr()


def test_every_page_is_reachable() -> None:
    """Each page of docs/ is in mkdocs.yml's nav (guarantees.md joins it when it lands)."""
    nav = (ROOT / "mkdocs.yml").read_text()
    pending = {"guarantees.md"}
    missing = [p.name for p in PAGES if p.name not in nav and p.name not in pending]
    assert not missing, f"pages not in mkdocs.yml nav: {missing}"


def test_mkdocs_build_is_strict_clean(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]' or '.[dev]')")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=240, env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "reference" / "core" / "index.html").exists()
    check_rendering(tmp_path / "site")


_PROMPT = "&gt;&gt;&gt; "


def check_rendering(site: Path) -> None:
    """Examples render as highlighted code (never as quoted prose), classes show their parameters, no private bases."""
    pages = sorted((site / "reference").glob("*/index.html"))
    assert len(pages) >= 4
    for page in pages:
        html = page.read_text()
        quoted = re.findall(r"<blockquote>(?:(?!</blockquote>).)*&gt;&gt;&gt;", html, re.S)
        assert not quoted, f"{page.parent.name}: an example renders as a quotation, not code"
        assert html.count(_PROMPT) == html.count(f'<span class="gp">{_PROMPT}</span>'), (
            f"{page.parent.name}: a '>>> ' prompt outside a highlighted code block"
        )
        assert not re.search(r"Bases:.{0,200}\b_[A-Za-z]", html, re.S), f"{page.parent.name}: a private base is shown"
    classification = (site / "reference" / "classification" / "index.html").read_text()
    text = re.sub(r"<[^>]+>", "", classification).replace("&#39;", "'")
    assert "MulticlassAccuracy(num_classes: int | None = None, top_k: int = 1, average: str | None = 'macro'" in text
    assert (site / "js" / "copy-code.js").exists()  # copying a console session copies the code alone
    notebooks = sorted((site / "notebooks").glob("*/index.html"))
    assert len(notebooks) == len(list((ROOT / "notebooks").glob("*.ipynb")))
    for page in notebooks:  # executed while the site is built: outputs, and plots where the notebook draws
        html = page.read_text()
        assert "jp-OutputArea-output" in html, f"{page.parent.name}: rendered without outputs"
    assert any("data:image/png" in p.read_text() for p in notebooks)
