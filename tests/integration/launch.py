"""Running the integration scripts: each starts its own processes, so each runs under ``subprocess``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent.parent
_LAUNCH_VARS = ("MASTER_PORT", "MASTER_ADDR", "RANK", "LOCAL_RANK", "WORLD_SIZE", "NODE_RANK", "GROUP_RANK")


def launch(script: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``script`` with a clean launch environment and this checkout importable; it must exit 0."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCH_VARS}
    env.update(OMP_NUM_THREADS="1", PYTHONPATH=path, MASTER_ADDR="127.0.0.1", PYTHONWARNINGS="default")
    done = subprocess.run([sys.executable, str(script), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def load(script: Path) -> ModuleType:
    """Import ``script`` as a module (its ``__main__`` does not run), for its data and model builders."""
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with warnings.catch_warnings():  # the frameworks' own import-time deprecation notices
        warnings.simplefilter("ignore", DeprecationWarning)
        spec.loader.exec_module(module)
    return module
