"""Benchmark: what shaping a tool's answer costs (mcp/protocol/content.py), against the floor, in one run.

    .venv/bin/python -m bench.result_content [--rounds 7] [--ops 200]

The floor is ``json.loads`` of the same JSON-RPC body: every client parses the answer, so it is
the least any client can spend on it. Shaping adds the block checks (base64 decoded strictly,
MIME types, URIs, caps), the text, and with an output schema the ``jsonschema`` check. Answers:

- text: three text blocks (2 KB);
- image: a caption and a 700 KB PNG-sized payload (base64 decoded and re-encoded once);
- structured: a 50-row structured answer checked against its output schema;
- hostile: 1.9 MB of base64 over the block cap (refused by its length, never decoded).

Microseconds per answer (median of rounds), and the ratio to the floor. For the structured
answer, the peer: the official SDK client's check (``ClientSession.validate_tool_result``: a
compiled validator kept per schema, then ``best_match`` over the errors) on top of the same parse.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import jsonschema

from nr_llm.mcp.protocol.content import outcome_of

ROWS_SCHEMA = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer"},
                    "name": {"type": "string"},
                    "score": {"type": "number"},
                },
                "required": ["id", "name", "score"],
            },
        }
    },
    "required": ["rows"],
}


def _answers() -> dict[str, tuple[str, dict[str, Any] | None]]:
    image = base64.b64encode(os.urandom(700_000)).decode()
    rows = [{"id": n, "name": f"row {n}", "score": n / 3} for n in range(50)]
    results: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = {
        "text": ({"content": [{"type": "text", "text": "x" * 700} for _ in range(3)]}, None),
        "image": (
            {
                "content": [
                    {"type": "text", "text": "a chart"},
                    {"type": "image", "data": image, "mimeType": "image/png"},
                ]
            },
            None,
        ),
        "structured": (
            {
                "content": [{"type": "text", "text": json.dumps({"rows": rows})}],
                "structuredContent": {"rows": rows},
            },
            ROWS_SCHEMA,
        ),
        "hostile": ({"content": [{"type": "image", "data": "A" * 1_900_000, "mimeType": "image/png"}]}, None),
    }
    return {
        name: (json.dumps({"jsonrpc": "2.0", "id": 2, "result": result}), schema)
        for name, (result, schema) in results.items()
    }


def _per_op_us(work: Callable[[], object], ops: int) -> float:
    started = time.perf_counter()
    for _ in range(ops):
        work()
    return (time.perf_counter() - started) / ops * 1e6


def _work(body: str, schema: dict[str, Any] | None) -> list[Callable[[], object]]:
    def floor() -> object:
        return json.loads(body)

    def shaped() -> object:
        return outcome_of(json.loads(body)["result"], "bench", schema)

    if schema is None:
        return [floor, shaped]
    validator = jsonschema.validators.validator_for(schema)(schema)

    def sdk() -> object:
        return jsonschema.exceptions.best_match(
            validator.iter_errors(json.loads(body)["result"]["structuredContent"])
        )

    return [floor, shaped, sdk]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ops", type=int, default=200)
    args = parser.parse_args()
    answers = _answers()
    print(f"{'answer':<12} {'floor µs':>10} {'nr_llm µs':>10} {'×floor':>7} {'SDK µs':>8} {'×SDK':>6}")
    for name, (body, schema) in answers.items():
        works = _work(body, schema)
        timings: list[list[float]] = [[] for _ in works]
        ops = max(1, args.ops // 20) if len(body) > 100_000 else args.ops
        for _ in range(args.rounds):  # interleaved: all see the same machine load
            for work, times in zip(works, timings, strict=True):
                times.append(_per_op_us(work, ops))
        floor, cost, *peer = (statistics.median(times) for times in timings)
        versus = f"{peer[0]:>8.1f} {cost / peer[0]:>6.2f}" if peer else f"{'-':>8} {'-':>6}"
        print(f"{name:<12} {floor:>10.1f} {cost:>10.1f} {cost / floor:>7.2f} {versus}")


if __name__ == "__main__":
    main()
