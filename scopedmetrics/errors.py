"""The one exception the library adds."""


class SyncError(RuntimeError):
    """Participants of a reduction disagree, or one of them never arrived.

    Raised on every participant, naming what differs and on which rank, so a
    disagreement ends in an error instead of a hang or a wrong number.

    Examples:
        >>> import scopedmetrics as sm, torch
        >>> def rank_fn(rank):  # rank 1 holds a different metric
        ...     m = sm.Sum() if rank == 0 else sm.Max()
        ...     try:
        ...         return m.compute()
        ...     except sm.SyncError as err:
        ...         return "SyncError"
        >>> sm.simulate(rank_fn, world_size=2)
        ['SyncError', 'SyncError']
    """
