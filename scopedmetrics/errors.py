"""The one exception the library adds."""


class SyncError(RuntimeError):
    """Participants of a reduction disagree, or one of them never arrived.

    Raised on every participant, naming what differs and on which rank, so a
    disagreement ends in an error instead of a hang or a wrong number.
    """
