"""Request completion and client disconnects (seed 003, ADR 0097).

Wrap the site's handler (``DisconnectAwareWSGI`` / ``DisconnectAwareASGI``), put
``RequestCompletionMiddleware`` last in ``MIDDLEWARE``, and every request completes
once: an access record on ``nr_llm.access`` and a ``RequestEvent`` on
``nr_llm.requests``; a client that left is a 499, not a 500 or silence.
"""

from .body import BodyRejected, read_json
from .classify import MAX_CAUSE_LINKS, is_client_disconnect
from .events import RequestEvent
from .signal import ClientDisconnected, DisconnectSignal, Phase, signal_for
from .status import CLIENT_CLOSED_REQUEST

__all__ = [
    "CLIENT_CLOSED_REQUEST",
    "MAX_CAUSE_LINKS",
    "BodyRejected",
    "ClientDisconnected",
    "DisconnectSignal",
    "Phase",
    "RequestEvent",
    "is_client_disconnect",
    "read_json",
    "signal_for",
]
