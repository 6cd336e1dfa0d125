"""Benchmark: what replacing lone surrogates costs where answers are decoded, in one run.

    .venv/bin/python -m bench.decode [--rounds 7]

``nr_llm.mcp.wire.text.loads`` (every answer's decoder, jsonrpc.decode) against the floor,
``json.loads`` of the same bytes: a tool answer of 2 KB, a 500-tool catalogue page (~1 MB, the
shape of tests/peers/sdk_server.py's generated tools) and a 2 MiB body at the size cap, each as
text and as bytes, without a surrogate (the usual case: one scan, no walk) and with one lone
``\\ud83d`` escape (the value walked). Median of rounds, ms per decode, and the ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from nr_llm.mcp.wire.text import loads


def _answer(text_chars: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "x" * text_chars}]}}


def _catalogue(tools: int) -> dict[str, Any]:
    entry = {
        "description": "A generated tool that does one thing and says so in a sentence or two. " * 3,
        "inputSchema": {
            "type": "object",
            "properties": {f"p{n}": {"type": "string", "description": "a parameter"} for n in range(8)},
            "required": ["p0"],
        },
    }
    return {
        "jsonrpc": "2.0",
        "id": 2,
        "result": {"tools": [{"name": f"tool_{n}", **entry} for n in range(tools)]},
    }


def _with_surrogate(raw: str) -> str:
    return raw.replace('"jsonrpc"', '"cut\\ud83d": 1, "jsonrpc"', 1)


def _timed(decode: Callable[[Any], Any], raw: str | bytes, rounds: int) -> float:
    repeat = max(1, 2_000_000 // max(len(raw), 1))
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(repeat):
            decode(raw)
        samples.append((time.perf_counter() - started) / repeat * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    bodies = {
        "tool answer, 2 KB": json.dumps(_answer(2000)),
        "catalogue page, 500 tools": json.dumps(_catalogue(500)),
        "body at the 2 MiB cap": json.dumps(_answer(2 * 1024 * 1024 - 100)),
    }
    heads = ("json.loads ms", "text.loads ms")
    print(
        f"{'body':<28} {'form':<6} {'surrogate':<9} {'bytes':>9} {heads[0]:>14} {heads[1]:>14} {'ratio':>6}"
    )
    for label, text in bodies.items():
        for surrogate in (False, True):
            raw_text = _with_surrogate(text) if surrogate else text
            for form, raw in (("str", raw_text), ("bytes", raw_text.encode())):
                floor = _timed(json.loads, raw, rounds)
                ours = _timed(loads, raw, rounds)
                print(
                    f"{label:<28} {form:<6} {'yes' if surrogate else 'no':<9} {len(raw):>9} "
                    f"{floor:>14.3f} {ours:>14.3f} {ours / floor:>6.2f}"
                )


if __name__ == "__main__":
    main()
