"""Kernels shared by the metric families: the measured speed tricks, in one place.

``counts`` holds the kernels states grow by, ``folds`` the fold of many whole
states, ``order`` the sorts of the exact curves, ``softmax`` the softmax of a few
classes; ``reference`` holds a plain twin
of each (a loop over the samples) that ``tests/test_kernels.py`` compares them
against on random inputs, every path of each kernel included. See README.md
for why each trick is here and what it buys.
"""

from scopedmetrics._kernels.counts import bincount, class_counts, full, tally
from scopedmetrics._kernels.order import ranked, take

__all__ = ["bincount", "class_counts", "full", "ranked", "take", "tally"]
