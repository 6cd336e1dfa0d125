"""Benchmark: our event-stream decoder against the one the official SDK client uses, in one run.

    .venv/bin/python -m bench.eventstream [--rounds 5]

A hostile server can send a long event in tiny chunks; a decoder that re-copies and
re-scans its unterminated tail on every chunk turns that into quadratic CPU inside the
operation's budget. The peer is httpx2's SSE parser (what `mcp`'s client decodes with),
fed the same text in the same chunks; rounds alternate so both see the same load.
Ratios, not absolute times, are the result.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nr_llm.mcp.wire.eventstream import EventStreamDecoder  # noqa: E402


def _ours(chunks: list[bytes]) -> int:
    decoder = EventStreamDecoder()
    return sum(len(decoder.feed(chunk)) for chunk in chunks)


def _peer(chunks: list[bytes]) -> int:
    from httpx2._sse import _SSEParser  # private, but it is the SDK client's real decoder

    parser = _SSEParser(max_event_size=None)
    # The peer takes text; decoding bytes is part of our side's work, so do it for the peer too.
    return sum(len(list(parser.decode(chunk.decode("utf-8")))) for chunk in chunks)


def _split(raw: bytes, size: int) -> list[bytes]:
    return [raw[at : at + size] for at in range(0, len(raw), size)]


CASES: dict[str, list[bytes]] = {
    "one 200 KB event, 1-byte chunks": _split(b"data: " + b"x" * 200_000 + b"\n\n", 1),
    "one 200 KB event, 4 KiB chunks": _split(b"data: " + b"x" * 200_000 + b"\n\n", 4096),
    "2,000 small events, 64-byte chunks": _split(
        b'data: {"jsonrpc":"2.0","id":1,"result":{}}\n\n' * 2000, 64
    ),
    # The cheapest lines a server can send (empty comments: a line ending per two bytes),
    # 2 MiB of them in the transport's 64 KiB chunks, with each of the three line endings
    # the format allows. The costs should match: a hostile server picks the dearest.
    **{
        f"2 MiB of empty comments, {name} line ends, 64 KiB chunks": _split(
            (b":" + end) * ((2 << 20) // (1 + len(end))), 64 * 1024
        )
        for name, end in (("LF", b"\n"), ("CRLF", b"\r\n"), ("CR", b"\r"))
    },
}


def _time(run: Callable[[list[bytes]], int], chunks: list[bytes]) -> float:
    started = time.process_time()
    run(chunks)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    for chunks in CASES.values():
        assert _ours(chunks) == _peer(chunks), "the decoders disagree on the events"
    print("| case | ours (ms CPU, median) | httpx2 SSE parser (ms CPU, median) | peer / ours |")
    print("|---|---:|---:|---:|")
    for name, chunks in CASES.items():
        ours: list[float] = []
        peer: list[float] = []
        for _ in range(args.rounds):
            ours.append(_time(_ours, chunks))
            peer.append(_time(_peer, chunks))
        mine, theirs = statistics.median(ours) * 1000, statistics.median(peer) * 1000
        print(f"| {name} | {mine:.1f} | {theirs:.1f} | {theirs / mine:.2f}x |")


if __name__ == "__main__":
    main()
