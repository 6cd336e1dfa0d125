"""Benchmark: keywords lost on the schema corpus, and what the argument check costs, in one run.

    .venv/bin/python -m bench.schema_losses [--rounds 200]

Losses: each schema of tests/schema_corpus.py through the normaliser, then offered in every
format (``nr_llm.tools.offering``); counted by ``tests.schema_corpus.lost_keywords``. (The rule
before migration 0007 is gone; its column, "lost before", was last measured at commit 40503a0.)

Cost: ``nr_llm.tools.arguments.argument_problems`` (schema check, bounded patterns, reliable formats)
against the floor, a plain ``Draft202012Validator(schema).iter_errors`` with no schema check,
no bound and no formats, on the same arguments (``{}``: the required ones missing), median µs.

Python servers (``--pydantic``): the twelve signatures of tests/pydantic_signatures.py served by
the official SDK's ``MCPServer`` and by ``fastmcp`` on 127.0.0.1, listed, then counted per format:
tools offered, and tools offered strict. Before local references were kept (commit 13d0ec5) the
SDK server had 4 of 12 offered in every format and 0 strict; fastmcp 11 offered and 2 strict.
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
    from nr_llm.tools.arguments import argument_problems
    from nr_llm.tools.offering import offered_schema
    from nr_llm.tools.strict import NotStrict, strict_schema
    from tests.schema_corpus import CORPUS, lost_keywords

    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--pydantic", action="store_true", help="count offered/strict on Python servers")
    options = parser.parse_args()
    if options.pydantic:
        _python_servers()
        return
    rounds = options.rounds

    heads = ("lost now", "offered", "strict", "check µs", "floor µs", "ratio")
    print(f"{'schema':24} " + " ".join(f"{head:>11}" for head in heads))
    totals = [0, 0]
    for name, schema in CORPUS.items():
        stored = normalise_schema(schema)
        now = len(lost_keywords(schema, stored))
        offered = len(lost_keywords(schema, offered_schema(stored)))
        try:
            strict_schema(offered_schema(stored))
            strict = "yes"
        except NotStrict:
            strict = "no"
        ours = _median(lambda stored=stored: argument_problems(stored, {}), rounds)
        floor = _median(lambda stored=stored: list(Draft202012Validator(stored).iter_errors({})), rounds)
        totals = [totals[0] + now, totals[1] + offered]
        cells = (now, offered, strict, f"{ours:.0f}", f"{floor:.0f}", f"{ours / floor:.1f}")
        print(f"{name:24} " + " ".join(f"{cell:>11}" for cell in cells))
    print(f"{'total':24} " + " ".join(f"{cell:>11}" for cell in totals))


def _python_servers() -> None:
    from nr_llm.mcp import ConnectionSettings, McpClient
    from nr_llm.mcp.protocol.endpoint import Endpoint
    from nr_llm.mcp.protocol.schema import SchemaRefused, normalise_schema
    from nr_llm.tools.offering import FORMATS, offered_schema
    from nr_llm.tools.strict import NotStrict, strict_schema
    from tests.peers import pydantic_server

    print(f"{'server':10} {'tools':>6} " + " ".join(f"{name:>17}" for name in FORMATS) + f" {'strict':>7}")
    for flavour in ("sdk", "fastmcp"):
        with pydantic_server(*(["--fastmcp"] if flavour == "fastmcp" else [])) as url:
            listed = McpClient(connection=ConnectionSettings(allow_private_networks=True)).list_tools(
                Endpoint("bench", url)
            )
        offered = strict = 0
        for tool in listed:
            try:
                schema = offered_schema(normalise_schema(tool["inputSchema"]))
            except SchemaRefused:
                continue
            offered += 1  # the same schema goes to every format (docs/catalogue.md, "Formats")
            try:
                strict_schema(schema)
                strict += 1
            except NotStrict:
                pass
        cells = " ".join(f"{offered:>17}" for _ in FORMATS)
        print(f"{flavour:10} {len(listed):>6} {cells} {strict:>7}")


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
