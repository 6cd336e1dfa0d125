"""Benchmark: keywords lost on the schema corpus, and what the argument check costs, in one run.

    .venv/bin/python -m bench.schema_losses [--rounds 200]

Losses: each schema of tests/schema_corpus.py through the first rule (the normaliser before
migration 0007, ``nr_llm.mcp.protocol.schema_v1.first_rule``) and through the current one, then offered
in every format (``nr_llm.tools.offering``); counted by ``tests.schema_corpus.lost_keywords``.

Cost: ``nr_llm.tools.arguments.argument_problems`` (schema check, bounded patterns, reliable formats)
against the floor, a plain ``Draft202012Validator(schema).iter_errors`` with no schema check,
no bound and no formats, on the same arguments (``{}``: the required ones missing), median µs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")


def main() -> None:
    import django

    django.setup()
    from jsonschema import Draft202012Validator

    from nr_llm.mcp.protocol.schema import normalise_schema
    from nr_llm.mcp.protocol.schema_v1 import first_rule
    from nr_llm.tools.arguments import argument_problems
    from nr_llm.tools.offering import offered_schema
    from nr_llm.tools.strict import NotStrict, strict_schema
    from tests.schema_corpus import CORPUS, lost_keywords

    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    rounds = parser.parse_args().rounds

    heads = ("lost before", "lost now", "offered", "strict", "check µs", "floor µs", "ratio")
    print(f"{'schema':24} " + " ".join(f"{head:>11}" for head in heads))
    totals = [0, 0, 0]
    for name, schema in CORPUS.items():
        stored = normalise_schema(schema)
        before = len(lost_keywords(schema, first_rule(schema)))
        now = len(lost_keywords(schema, stored))
        offered = len(lost_keywords(schema, offered_schema(stored)))
        try:
            strict_schema(offered_schema(stored))
            strict = "yes"
        except NotStrict:
            strict = "no"
        ours = _median(lambda stored=stored: argument_problems(stored, {}), rounds)
        floor = _median(lambda stored=stored: list(Draft202012Validator(stored).iter_errors({})), rounds)
        totals = [totals[0] + before, totals[1] + now, totals[2] + offered]
        cells = (before, now, offered, strict, f"{ours:.0f}", f"{floor:.0f}", f"{ours / floor:.1f}")
        print(f"{name:24} " + " ".join(f"{cell:>11}" for cell in cells))
    print(f"{'total':24} " + " ".join(f"{cell:>11}" for cell in totals))


def _median(run: object, rounds: int) -> float:
    assert callable(run)
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1e6)
    return statistics.median(samples)


if __name__ == "__main__":
    main()
