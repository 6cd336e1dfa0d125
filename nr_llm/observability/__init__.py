"""Every request completes once, with an access record and a ``RequestEvent``; a client that
left is a 499, not a 500 or silence (docs/observability.md)."""

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
