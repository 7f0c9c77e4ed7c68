"""Metrics built from metrics: slices, bootstrap intervals, per-class dicts, windows, tasks, outputs, trackers.

Each wrapper is an ``sm.Metric`` whose state is the wrapped metrics' states, so
it reduces in the same single bucketed pass as everything else, merges,
checkpoints (``state_dict``/``load_state_dict``) and runs in ``sm.simulate``.
Names and arguments follow TorchMetrics where it has the wrapper; see
``docs/wrappers.md`` for the differences. Wrappers take a *fresh* metric: they
keep its configuration and start empty.
"""

from scopedmetrics.wrappers import _families as _families  # registers the catalogue's vectorised updates
from scopedmetrics.wrappers._groups import register_sliced_update as register_sliced_update
from scopedmetrics.wrappers.bootstrap import BootStrapper as BootStrapper
from scopedmetrics.wrappers.classwise import ClasswiseWrapper as ClasswiseWrapper
from scopedmetrics.wrappers.classwise import MultitaskWrapper as MultitaskWrapper
from scopedmetrics.wrappers.keyed import KeyedSliced as KeyedSliced
from scopedmetrics.wrappers.running import MultioutputWrapper as MultioutputWrapper
from scopedmetrics.wrappers.running import Running as Running
from scopedmetrics.wrappers.sliced import Sliced as Sliced
from scopedmetrics.wrappers.tracker import MetricTracker as MetricTracker
from scopedmetrics.wrappers.tracker import MinMaxMetric as MinMaxMetric

__all__ = [
    "BootStrapper",
    "ClasswiseWrapper",
    "KeyedSliced",
    "MetricTracker",
    "MinMaxMetric",
    "MultioutputWrapper",
    "MultitaskWrapper",
    "Running",
    "Sliced",
    "register_sliced_update",
]
