"""The incremental event-stream decoder."""

from __future__ import annotations

import time

from nr_llm.mcp.wire.eventstream import Event, EventStreamDecoder


def _feed_bytewise(raw: bytes) -> list[Event]:
    decoder = EventStreamDecoder()
    return [event for index in range(len(raw)) for event in decoder.feed(raw[index : index + 1])]


def test_events_are_dispatched_on_blank_lines_whatever_the_chunking() -> None:
    """Fed one byte at a time, with LF, CRLF and CR line ends, the same events come out."""
    raw = b'event: message\r\nid: 7\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: two\n\ndata: three\r\r\n'
    events = _feed_bytewise(raw)
    assert events == [
        Event(data='{"a":\n1}', event="message", id="7"),
        Event(data="two"),
        Event(data="three"),
    ]


def test_comments_and_data_less_events_are_not_dispatched() -> None:
    """Keep-alive comments and a priming event with only an id produce nothing, but the id is remembered."""
    decoder = EventStreamDecoder()
    assert decoder.feed(b": ping\n\nid: prime-1\nretry: 1500\ndata:\n\n") == []
    assert decoder.last_event_id == "prime-1" and decoder.retry_ms == 1500


def test_utf8_split_across_chunks_is_decoded() -> None:
    """A multi-byte character split between chunks arrives whole."""
    assert _feed_bytewise("data: Grüße\n\n".encode()) == [Event(data="Grüße")]


def test_an_unfinished_event_is_not_dispatched() -> None:
    """Data without the closing blank line is held back (the stream ended early)."""
    assert EventStreamDecoder().feed(b"data: half\n") == []


def test_a_line_ended_by_a_lone_cr_dispatches_when_the_next_chunk_has_no_line_end() -> None:
    """A CR held back (it might start a CRLF) ends its line as soon as a chunk shows it did not."""
    decoder = EventStreamDecoder()
    assert decoder.feed(b"data: one\r\r") == []  # the blank line's CR may still be half a CRLF
    assert decoder.feed(b"x") == [Event(data="one")]


def test_any_chunking_of_a_long_line_gives_the_same_events() -> None:
    """Chunks of every size from 1 to 13 bytes over a 5,000-byte data line give exactly the events
    of feeding it whole (the fragment buffer loses and reorders nothing)."""
    raw = b"id: 1\ndata: " + b"ab\xc3\xa9" * 1250 + b"\r\n\r\ndata: tail\r\r\n"
    whole = EventStreamDecoder().feed(raw)
    assert [event.data[:4] for event in whole] == ["ab\u00e9a", "tail"]
    for size in range(1, 14):
        decoder = EventStreamDecoder()
        chunked = [event for at in range(0, len(raw), size) for event in decoder.feed(raw[at : at + size])]
        assert chunked == whole, size


def test_a_lone_cr_ending_the_stream_ends_its_line() -> None:
    """A CR held back as possibly half a CRLF is a line end once the stream closes: an event
    whose blank line is that last CR is dispatched, an unterminated line after it is not."""
    decoder = EventStreamDecoder()
    assert decoder.feed(b"data: one\r\r") == []
    assert decoder.end() == [Event(data="one")]
    assert EventStreamDecoder().end() == []
    unfinished = EventStreamDecoder()
    assert unfinished.feed(b"data: half\r") == [] and unfinished.end() == []


def test_a_byte_order_mark_opening_the_stream_is_dropped() -> None:
    """WHATWG: one U+FEFF at the very start is not part of the stream, even split over
    chunks; a second one, or one later in the stream, is kept (and spoils its field name)."""
    assert _feed_bytewise(b"\xef\xbb\xbfdata: first\n\n") == [Event(data="first")]
    assert _feed_bytewise(b"\xef\xbb\xbf\xef\xbb\xbfdata: x\n\n") == []
    assert _feed_bytewise(b"data: a\n\n\xef\xbb\xbfdata: b\n\n") == [Event(data="a")]


def test_cr_line_ends_cost_what_lf_line_ends_cost() -> None:
    """256 KiB of empty comments in one chunk: with CR line ends the decoder does the same
    work as with LF (no search to the end of the chunk for each line). Timed on the CPU
    clock, best of three, with a wide margin: a scan per line costs twentyfold."""

    def cpu(end: bytes) -> float:
        chunk = (b":" + end) * (128 * 1024)
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            EventStreamDecoder().feed(chunk)
            best = min(best, time.process_time() - started)
        return best

    assert cpu(b"\r") < 3 * cpu(b"\n") + 0.01
