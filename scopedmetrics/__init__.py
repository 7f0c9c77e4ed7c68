"""scopedmetrics: metrics as immutable pytrees, reduced by the reducer in scope.

The data path of ``compute()``: metric -> leaves + ops (``sync``) -> reducer
(``reducers``, ``comm``) -> leaves -> metric -> the metric's own ``compute``.
"""

from scopedmetrics.aggregation import Cat as Cat
from scopedmetrics.aggregation import Max as Max
from scopedmetrics.aggregation import Mean as Mean
from scopedmetrics.aggregation import Min as Min
from scopedmetrics.aggregation import Sum as Sum
from scopedmetrics.collection import Collection as Collection
from scopedmetrics.collection import compute as compute
from scopedmetrics.collection import reduce as reduce
from scopedmetrics.errors import SyncError as SyncError
from scopedmetrics.metric import Metric as Metric
from scopedmetrics.reducers import Reducer as Reducer
from scopedmetrics.reducers import distributed as distributed
from scopedmetrics.reducers import local as local
from scopedmetrics.scope import get_reducer as get_reducer
from scopedmetrics.scope import reset_reducer as reset_reducer
from scopedmetrics.scope import set_reducer as set_reducer
from scopedmetrics.scope import subgroup as subgroup
from scopedmetrics.scope import use_reducer as use_reducer
from scopedmetrics.simulate import simulate as simulate
from scopedmetrics.state import NAMESPACE as NAMESPACE
from scopedmetrics.state import state as state
from scopedmetrics.state import static as static

__version__ = "0.1.0"

__all__ = [
    "NAMESPACE",
    "Cat",
    "Collection",
    "Max",
    "Mean",
    "Metric",
    "Min",
    "Reducer",
    "Sum",
    "SyncError",
    "compute",
    "distributed",
    "get_reducer",
    "local",
    "reduce",
    "reset_reducer",
    "set_reducer",
    "simulate",
    "state",
    "static",
    "subgroup",
    "use_reducer",
]
