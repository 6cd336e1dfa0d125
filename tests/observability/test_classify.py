"""The classifier matrix: signal aborted AND (abort error at top level, or the exact reason
reached through ``__cause__``: identity only, cycle-safe, at most 8 links)."""

from __future__ import annotations

import asyncio
import errno

import pytest
from django.core.exceptions import RequestAborted

from nr_llm.observability import MAX_CAUSE_LINKS, ClientDisconnected, DisconnectSignal, Phase
from nr_llm.observability.classify import is_client_disconnect


def aborted(reason: BaseException | None = None) -> DisconnectSignal:
    signal = DisconnectSignal()
    signal.abort(reason or ClientDisconnected("gone"), Phase.REQUEST_BODY)
    return signal


def chain(reason: BaseException, links: int) -> BaseException:
    """An exception whose ``__cause__`` chain reaches ``reason`` after ``links`` links."""
    current = reason
    for number in range(links):
        outer = RuntimeError(f"layer {number}")
        outer.__cause__ = current
        current = outer
    return current


@pytest.mark.parametrize(
    "error", [asyncio.CancelledError(), RequestAborted(), ClientDisconnected("another instance")]
)
def test_runtime_abort_errors_at_top_level_are_disconnects_when_aborted(error):
    """CancelledError, RequestAborted and ClientDisconnected classify while the signal is aborted."""
    assert is_client_disconnect(error, aborted())


@pytest.mark.parametrize(
    "error", [asyncio.CancelledError(), RequestAborted(), ClientDisconnected("raised by the app")]
)
def test_abort_errors_while_the_signal_is_active_are_not(error):
    """Without an aborted signal even the runtime's abort errors stay server errors."""
    assert not is_client_disconnect(error, DisconnectSignal())
    assert not is_client_disconnect(error, None)


def test_eight_cause_links_classify_and_nine_do_not():
    """The reason is found through exactly MAX_CAUSE_LINKS (8) links, not through 9."""
    reason = ConnectionResetError(errno.ECONNRESET, "reset")
    signal = aborted(reason)
    assert MAX_CAUSE_LINKS == 8
    assert is_client_disconnect(chain(reason, 8), signal)
    assert not is_client_disconnect(chain(reason, 9), signal)


def test_the_reason_itself_classifies():
    """The exact reason object, raised as it is, is a disconnect."""
    reason = OSError("transport said goodbye")
    assert is_client_disconnect(reason, aborted(reason))


def test_an_equal_but_different_exception_does_not_classify():
    """Same class, errno and message as the reason, but another object: a server error."""
    reason = ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
    lookalike = ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")
    assert not is_client_disconnect(lookalike, aborted(reason))
    assert not is_client_disconnect(chain(lookalike, 2), aborted(reason))


def test_context_is_never_followed():
    """An error raised while handling the disconnect (implicit ``__context__``) is a new failure."""
    reason = OSError("reset")
    later = ValueError("bug in the cleanup code")
    later.__context__ = reason
    assert not is_client_disconnect(later, aborted(reason))


def test_a_cause_cycle_terminates_and_does_not_classify():
    """A cycle in ``__cause__`` is walked once and then given up."""
    first, second = RuntimeError("a"), RuntimeError("b")
    first.__cause__, second.__cause__ = second, first
    assert not is_client_disconnect(first, aborted(OSError("reason elsewhere")))


def test_the_first_reason_is_never_replaced():
    """A second abort keeps the first reason and phase."""
    signal = DisconnectSignal()
    first, second = OSError("first"), OSError("second")
    assert signal.abort(first, Phase.REQUEST_BODY) is first
    assert signal.abort(second, Phase.RESPONSE) is first
    assert (signal.reason, signal.phase) == (first, Phase.REQUEST_BODY)
