"""Writes docs/coverage.md: every public TorchMetrics 1.9 class, and where scopedmetrics has it.

Run ``python scripts/coverage_page.py`` to regenerate the page (``--check``
exits 1 when the committed page is stale). ``mkdocs build`` runs it too, as a
hook (``hooks:`` in mkdocs.yml): with TorchMetrics 1.9 installed the page is
rewritten when it changed; without it (or with another version) the committed
page is kept, since the list is TorchMetrics 1.9's.

TorchMetrics' classes are read from the source of the installed package, not
from an import: every ``__all__`` of ``torchmetrics`` and its subpackages,
including the names it adds only when an optional dependency is installed
(``if _TORCHVISION_AVAILABLE: __all__ += [...]``), so the page is the same on
every machine that has TorchMetrics 1.9. A class is present in scopedmetrics
when the subpackage of the same family (or another one) exports it under the
same name, or under the name ``RENAMED`` gives.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.util
import pkgutil
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGE = DOCS / "coverage.md"
VERSION = "1.9"  # the TorchMetrics release the catalogue follows (names, arguments, positional order)

# Families in page order; a family TorchMetrics adds later is appended in alphabetical order.
FAMILIES = ("core", "aggregation", "classification", "regression", "text", "retrieval", "audio", "image",
            "detection", "segmentation", "clustering", "nominal", "multimodal", "shape", "video", "wrappers")
TITLES = {"core": "Core"}
NOT_METRICS = {"functional"}  # in torchmetrics.__all__: a module

# TorchMetrics name -> (scopedmetrics module, name, how it is called when that differs from a rename)
RENAMED: dict[str, tuple[str, str, str | None]] = {
    "Metric": ("scopedmetrics", "Metric", None),
    "MetricCollection": ("scopedmetrics", "Collection", None),
    "MeanMetric": ("scopedmetrics.aggregation", "Mean", None),
    "SumMetric": ("scopedmetrics.aggregation", "Sum", None),
    "MaxMetric": ("scopedmetrics.aggregation", "Max", None),
    "MinMetric": ("scopedmetrics.aggregation", "Min", None),
    "CatMetric": ("scopedmetrics.aggregation", "Cat", None),
    "RunningMean": ("scopedmetrics.wrappers", "Running", "Running(sm.Mean(), window)"),
    "RunningSum": ("scopedmetrics.wrappers", "Running", "Running(sm.Sum(), window)"),
}

# The page (and the heading) that says how each family differs from TorchMetrics.
PAGES = {"core": "migration-torchmetrics.md", "aggregation": "aggregation.md"}
DISPATCHERS = ("classification.md", "Task dispatchers")

# Optional dependencies TorchMetrics tests for (its ``_X_AVAILABLE`` flags), as pip names.
PACKAGES = {"TORCH_FIDELITY": "torch-fidelity", "TORCH_VMAF": "vmaf-torch", "PYSTOI": "pystoi", "SCIPI": "scipy"}


@dataclass(frozen=True)
class Entry:
    """One public TorchMetrics class: its family, its name, and what TorchMetrics needs installed to export it."""

    family: str
    name: str
    needs: str | None


@dataclass(frozen=True)
class Found:
    """Where scopedmetrics has a TorchMetrics class."""

    module: str
    name: str
    call: str | None = None


# -- TorchMetrics' side: read from its source ----------------------------------------------------------


def torchmetrics_dir() -> Path | None:
    """The installed ``torchmetrics`` package directory, or ``None``."""
    spec = importlib.util.find_spec("torchmetrics")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def torchmetrics_version(tm: Path) -> str:
    """``__version__`` from ``torchmetrics/__about__.py``, read without importing the package."""
    match = re.search(r"""__version__\s*=\s*["']([^"']+)""", (tm / "__about__.py").read_text())
    return match.group(1) if match else "unknown"


def _needs(test: ast.expr) -> str:
    """``_TORCHVISION_AVAILABLE and _PESQ_AVAILABLE`` -> ``"torchvision, pesq"``."""
    names = []
    for node in ast.walk(test):
        flag = re.fullmatch(r"_?([A-Z0-9_]+?)_(?:AVAILABLE|GREATER_EQUAL_([\d_]+))", getattr(node, "id", ""))
        if flag:
            pip = PACKAGES.get(flag.group(1), flag.group(1).lower().replace("_", "-"))
            names.append(f"{pip}>={flag.group(2).replace('_', '.')}" if flag.group(2) else pip)
    return ", ".join(dict.fromkeys(names)) or ast.unparse(test)


def exported(init: Path) -> tuple[list[tuple[str, str | None]], dict[str, str]]:
    """What ``init`` exports: its ``__all__`` names, and the module each imported name comes from.

    Each name comes with the optional dependency it is added under (``None``: always).
    """
    tree = ast.parse(init.read_text())
    names: list[tuple[str, str | None]] = []
    sources: dict[str, str] = {}

    def visit(body: list[ast.stmt], needs: str | None) -> None:
        for node in body:
            if isinstance(node, ast.If):
                visit(node.body, _needs(node.test) if needs is None else f"{needs}, {_needs(node.test)}")
                visit(node.orelse, needs)
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    sources[alias.asname or alias.name] = node.module
            elif isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                    for item in ast.walk(node.value):
                        if isinstance(item, ast.Constant) and isinstance(item.value, str):
                            names.append((item.value, needs))

    visit(tree.body, None)
    return names, sources


def torchmetrics_classes(tm: Path) -> list[Entry]:
    """Every public class: the subpackages' ``__all__``, then what only the top level exports (aggregation, core)."""
    entries: dict[tuple[str, str], Entry] = {}
    for sub in sorted(pkgutil.iter_modules([str(tm)]), key=lambda m: m.name):
        if sub.ispkg and not sub.name.startswith("_") and sub.name not in ("functional", "utilities"):
            for name, needs in exported(tm / sub.name / "__init__.py")[0]:
                entries.setdefault((sub.name, name), Entry(sub.name, name, needs))
    names, sources = exported(tm / "__init__.py")
    known = {name for _, name in entries}
    for name, needs in names:
        if name in NOT_METRICS or name in known:
            continue
        family = sources.get(name, "torchmetrics").split(".")[1:2] or ["core"]
        family = ["core"] if family[0] in ("metric", "collections") else family
        entries.setdefault((family[0], name), Entry(family[0], name, needs))
    return list(entries.values())


# -- scopedmetrics' side: imported ----------------------------------------------------------------------


def scopedmetrics_exports() -> dict[str, list[str]]:
    """``{module: its __all__}`` for ``scopedmetrics`` and every public subpackage (aggregation: its classes)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import scopedmetrics

    out = {"scopedmetrics": list(scopedmetrics.__all__)}
    for sub in pkgutil.iter_modules(scopedmetrics.__path__):
        if sub.name.startswith("_"):
            continue
        module = importlib.import_module(f"scopedmetrics.{sub.name}")
        names = getattr(module, "__all__", None)
        if names is None and sub.name == "aggregation":
            names = [n for n, v in vars(module).items() if isinstance(v, type) and v.__module__ == module.__name__
                     and issubclass(v, scopedmetrics.Metric) and not n.startswith("_")]
        if names is not None:
            out[module.__name__] = list(names)
    return out


def find(entry: Entry, exports: dict[str, list[str]]) -> Found | None:
    """Where scopedmetrics has ``entry``: the renamed class, the same family's namesake, or another family's."""
    if entry.name in RENAMED:
        return Found(*RENAMED[entry.name])
    own = f"scopedmetrics.{entry.family}"
    if entry.name in exports.get(own, ()):
        return Found(own, entry.name)
    for module, names in exports.items():
        if module != "scopedmetrics" and entry.name in names:
            return Found(module, entry.name)
    return None


def resolve(found: Found) -> Any:
    """The scopedmetrics object ``found`` names (an ``AttributeError`` if it is not there)."""
    return getattr(importlib.import_module(found.module), found.name)


# -- the page ------------------------------------------------------------------------------------------------


def _slug(heading: str) -> str:
    """The anchor mkdocs gives a heading (Python-Markdown's ``toc`` slugify, the site's setting)."""
    from markdown.extensions.toc import slugify

    return slugify(re.sub(r"[`*_]", "", heading), "-")


def differences(page: str, heading: str | None = None) -> str:
    """``page#anchor`` of the section of ``page`` on how it differs from TorchMetrics (the page if it has none)."""
    text = (DOCS / page).read_text() if (DOCS / page).exists() else ""
    headings = [h.strip() for h in re.findall(r"^#{2,4}\s+(.+)$", text, re.M)]
    if heading is None:
        ranked = ([h for h in headings if re.search(r"differ", h, re.I) and "TorchMetrics" in h]
                  + [h for h in headings if re.search(r"differ|degenerate", h, re.I)])
        heading = ranked[0] if ranked else None
    elif heading not in headings:
        raise ValueError(f"{page} has no heading {heading!r}")
    return f"{page}#{_slug(heading)}" if heading else page


def link(entry: Entry, found: Found) -> str:
    """The Markdown link to the family section that documents ``found``'s differences."""
    family = found.module.split(".")[1] if "." in found.module else "core"
    if family == "classification" and entry.name in _dispatchers():
        return f"[task dispatchers]({differences(*DISPATCHERS)})"
    page = PAGES.get(family, f"{family}.md")
    return f"[{'migration' if family == 'core' else family}]({differences(page)})"


def _dispatchers() -> tuple[str, ...]:
    module = importlib.import_module("scopedmetrics.classification.dispatch")
    return tuple(getattr(module, "__all__", ()))


def _family_order(families: set[str]) -> list[str]:
    return [f for f in FAMILIES if f in families] + sorted(families - set(FAMILIES))


def render(version: str, entries: list[Entry], exports: dict[str, list[str]]) -> str:
    """The Markdown of docs/coverage.md."""
    found = {e: find(e, exports) for e in entries}
    top = set(exports["scopedmetrics"])
    by_family: dict[str, list[Entry]] = {}
    for e in entries:
        by_family.setdefault(e.family, []).append(e)
    have, total = sum(f is not None for f in found.values()), len(entries)
    lines = [
        "# Coverage of TorchMetrics",
        "",
        f"<!-- Generated by scripts/coverage_page.py from TorchMetrics {version}: do not edit by hand; -->",
        "<!-- regenerate with `python scripts/coverage_page.py` (mkdocs build runs it too). -->",
        "",
        f"Every public class of TorchMetrics {version} — the `__all__` of `torchmetrics` and of each of its",
        "subpackages, including the classes it exports only when an optional dependency is installed — and",
        "the scopedmetrics class that replaces it. Classes of the same name take the same constructor",
        "arguments in the same positional order ([migrating](migration-torchmetrics.md)); the last column",
        "links to the section of the family's page that says where values or behaviour differ.",
        f"**{have} of {total}** are here.",
        "",
        "| family | TorchMetrics classes | in scopedmetrics |",
        "| --- | ---: | ---: |",
    ]
    order = _family_order(set(by_family))
    for family in order:
        rows = by_family[family]
        title = TITLES.get(family, family.capitalize())
        n = sum(found[e] is not None for e in rows)
        lines.append(f"| [{title}](#{_slug(title)}) | {len(rows)} | {n} |")
    for family in order:
        title = TITLES.get(family, family.capitalize())
        lines += ["", f"## {title}", "", "| TorchMetrics | scopedmetrics | differences |", "| --- | --- | --- |"]
        for e in sorted(by_family[family], key=lambda e: e.name.lower()):
            tm_name = f"`{e.name}`" + (f" (TorchMetrics: with {e.needs})" if e.needs else "")
            f = found[e]
            if f is None:
                lines.append(f"| {tm_name} | — | not provided |")
                continue
            where = f"`{f.module}.{f.call or f.name}`"
            if f.module != "scopedmetrics" and f.name in top and f.call is None:
                where += f" (`sm.{f.name}`)"
            lines.append(f"| {tm_name} | {where} | {link(e, f)} |")
    import scopedmetrics

    matched = {(f.module, f.name) for f in found.values() if f is not None}
    extra = sorted(
        (module, name) for module, names in exports.items() if module.split(".")[1:2] and
        module.split(".")[1] in FAMILIES for name in names if (module, name) not in matched
        and isinstance(obj := resolve(Found(module, name)), type) and issubclass(obj, scopedmetrics.Metric)
    )
    if extra:
        lines += ["", "## Only in scopedmetrics", "", "| scopedmetrics | guide |", "| --- | --- |"]
        for module, name in extra:
            family = module.split(".")[1]
            lines.append(f"| `{module}.{name}` | [{family}]({PAGES.get(family, f'{family}.md')}) |")
    return "\n".join(lines) + "\n"


def generate() -> str | None:
    """The page for the installed TorchMetrics, or ``None`` when it is not installed or not release ``VERSION``."""
    tm = torchmetrics_dir()
    if tm is None:
        return None
    version = torchmetrics_version(tm)
    if not (version == VERSION or version.startswith(f"{VERSION}.")):
        return None
    return render(version, torchmetrics_classes(tm), scopedmetrics_exports())


def write() -> str:
    """Regenerate docs/coverage.md if possible; what was done, in words."""
    page = generate()
    if page is None:
        return f"TorchMetrics {VERSION} is not installed: docs/coverage.md kept as committed"
    if PAGE.exists() and PAGE.read_text() == page:
        return "docs/coverage.md is up to date"
    PAGE.write_text(page)
    return "docs/coverage.md regenerated"


def on_pre_build(config: Any, **kwargs: Any) -> None:
    """The mkdocs hook: regenerate the page before the site is built (only when it changed)."""
    import logging

    logging.getLogger("mkdocs.hooks.coverage").info(write())


def main() -> int:
    """Command line: regenerate, or with ``--check`` report whether the committed page is current."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--check", action="store_true", help="exit 1 if docs/coverage.md differs from a regeneration")
    args = p.parse_args()
    if args.check:
        page = generate()
        if page is None:
            print(f"TorchMetrics {VERSION} is not installed: nothing to compare", file=sys.stderr)
            return 2
        stale = not PAGE.exists() or PAGE.read_text() != page
        print("docs/coverage.md is stale" if stale else "docs/coverage.md is up to date")
        return int(stale)
    print(write())
    return 0


if __name__ == "__main__":
    sys.exit(main())
