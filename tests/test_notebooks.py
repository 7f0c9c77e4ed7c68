"""The notebooks in notebooks/ execute top to bottom, draw their plots, and are committed without outputs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="notebooks need nbclient (pip install -e '.[notebooks]')")
nbclient = pytest.importorskip("nbclient", reason="notebooks need nbclient (pip install -e '.[notebooks]')")

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert [p.name for p in NOTEBOOKS] == [
        "01_uneven_ranks.ipynb",
        "02_subgroups.ipynb",
        "03_custom_metric_and_reducer.ipynb",
        "04_slices_and_intervals.ipynb",
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert not dirty, f"{path.name}: clear the outputs of cells {dirty} before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ipykernel", reason="notebooks need ipykernel (pip install -e '.[notebooks]')")
    pytest.importorskip("matplotlib", reason="notebooks need matplotlib (pip install -e '.[notebooks]')")
    # The kernel draws with matplotlib's inline backend (Agg underneath): no display needed.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "1"))
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()  # raises CellExecutionError, with the cell and traceback, if any cell fails
    images = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if "image/png" in o.get("data", {})]
    assert images, f"{path.name} drew no plot"
