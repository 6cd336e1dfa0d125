"""Benchmark: what a view pays for a tool call and for a model's 4-call turn, in one run.

    .venv/bin/python -m bench.turn [--delay-ms 20] [--rounds 9] [--ops 10]
        [--postgres postgres://postgres@127.0.0.1:5432/nrllm_bench_turn | --postgres none]
        [--databases sqlite,wal,postgres]

The official SDK server over TLS by name behind bench/wan.py's latency proxy (D ms each way, in a
process of its own, so its work does not compete with the contenders' for this one's CPU), and
a throw-away database, each in a process of its own: SQLite (a file, as a site has it, not the
tests' in-memory one) with its default rollback journal and in WAL mode (``init_command``), and
PostgreSQL; connections persistent (``CONN_MAX_AGE=60``) as a production site has them.
Compared round by round, so all see the same load:

- the floor: one POST per call on a kept-alive ``requests`` session (bench/wan.py's);
- the client's warm call: ``McpClient.call_tool`` as ``mcp_client()`` builds it (health stamp
  included), connections kept;
- ``tools.execute()``: the same call through the tool API (its catalogue row read, ceiling, two
  ledger rows each committed durably in a transaction of its own, the stamp with the outcome);
- a 4-call turn: ``execute_many``, ``aexecute`` gathered and ``aexecute_many`` (in one event
  loop, as an async view has it), and for reference 4 ``execute()`` one after another;
- and what no turn can beat on this machine: the client's 4 warm calls at once on 4 threads,
  no ledger (the server's and this process's own work for 4 calls side by side);
- the ledger's floor: what any ledger that commits a row before the call is sent and its
  outcome (with the server's stamp) after it costs here, with nothing of nr_llm's but the
  client: the database driver's own connection (no Django), a table of four columns, one
  INSERT and one UPDATE of the outcome carrying the stamp (PostgreSQL: one statement; SQLite: one
  transaction), each committed durably as nr_llm's are, around the warm call without its own stamp;
  alone and 4 at once. ``execute()``'s distance from it is what nr_llm itself adds. The driver
  prepares the floor's two statements after 5 uses, as psycopg does by default.

Ms per call or per turn (median of rounds), and ratios against one floor POST and one warm
client call. Targets (issue 26): ``execute()`` at most 3 ms over the client's warm call; a
4-call turn at most 1.5x one call, sync and async; each judged round by round against the
warm call of the same round (the median of those), so a drift of a shared machine between
rounds does not decide it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from nr_llm.mcp import ConnectionSettings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

FLOOR = "floor: one POST, kept-alive `requests`"
CLIENT = "client's warm call (`McpClient.call_tool`)"
EXECUTE = "`tools.execute()`"
MANY = "4-call turn: `execute_many`"
GATHERED = "4-call turn: `aexecute` ×4 gathered"
AMANY = "4-call turn: `aexecute_many`"
SERIAL = "4-call turn: `execute()` ×4 one after another"
CLIENTS = "4 warm client calls at once (threads): a turn's floor here"
LEDGER_FLOOR = "the ledger's floor: the warm call, a row before it, its outcome and stamp after (raw driver)"
LEDGER_FLOORS = "the ledger's floor, 4 at once (threads)"
TURN = [MANY, GATHERED, AMANY, SERIAL]


def child(delay: float, rounds: int, ops: int) -> None:
    """One database: set up, measure, print the table's rows (run with DATABASE_URL set or not)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    os.environ.setdefault("NR_LLM_CREDENTIAL_KEYS", "bench-only-key")
    import django

    django.setup()
    from django.db import connection

    directory = tempfile.mkdtemp(prefix="nr-llm-turn-")
    # Persistent connections, as a production site configures them: the view's thread keeps
    # its connection between calls here, so the tool-call pool's threads may keep theirs too.
    connection.settings_dict["CONN_MAX_AGE"] = 60
    if connection.vendor == "sqlite":
        # A file, as a site's SQLite is (the tests' default is an in-memory database).
        connection.settings_dict["TEST"]["NAME"] = str(Path(directory) / "bench.sqlite3")
        if os.environ.get("BENCH_SQLITE_WAL"):
            # Write-ahead log, commits without a sync each: Django's documented init_command.
            connection.settings_dict["OPTIONS"]["init_command"] = (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
            )
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        rows = _measure(Path(directory), connection.vendor, delay, rounds, ops)
    finally:
        from nr_llm.own_transaction import close_writers
        from nr_llm.tools.threads import close_pool

        close_pool()
        close_writers()
        connection.creation.destroy_test_db(old_name, verbosity=0)
    print("\n".join(rows), flush=True)


def _measure(directory: Path, vendor: str, delay: float, rounds: int, ops: int) -> list[str]:
    from django.test.utils import override_settings

    from bench.wan import NAME, floor
    from nr_llm import tools
    from nr_llm.mcp import McpClient
    from nr_llm.mcp.wire.pool import process_pool
    from nr_llm.models import DataClass, McpServer, McpTool
    from nr_llm.servers.endpoints import endpoint_for
    from nr_llm.servers.health import HealthRecorder
    from tests.peers import running
    from tests.tls import TestAuthority, sdk_server_tls

    authority = TestAuthority(directory)
    ca = str(authority.bundle)
    with (
        override_settings(NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS=True),
        sdk_server_tls(authority, NAME) as url,
        # The link in a process of its own: its work is the network's, not this process's CPU.
        running(
            [sys.executable, "-m", "bench.turn", "--proxy", url.split("/")[2].rsplit(":", 1)[1], str(delay)]
        ) as proxy_port,
    ):
        server = McpServer.objects.create(
            identifier="bench",
            name="Bench",
            url=f"https://{NAME}:{proxy_port}/mcp",
            data_class=DataClass.PUBLIC_CONTENT,
            requires_approval=False,
            enabled=True,
            # BENCH_TURN_CAP=N: the server's own "calls at once", so each call takes a lease.
            max_concurrent_calls=int(os.environ.get("BENCH_TURN_CAP") or 0) or None,
        )
        schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
        McpTool.objects.create(
            server=server, tool_name="mcp_bench_echo", remote_name="echo", enabled=True, input_schema=schema
        )
        # As mcp_client() builds it, with the name dialling the proxy and the test CA trusted.
        client = McpClient(
            connection=ConnectionSettings(
                allow_private_networks=True, resolver=lambda host, port: ["127.0.0.1"], ca_bundle=str(ca)
            ),
            health=HealthRecorder(),
        )
        endpoint = endpoint_for(server)
        arguments = {"text": "hi"}
        turn_calls = [("mcp_bench_echo", {"text": f"hi {i}"}) for i in range(4)]
        loop = asyncio.new_event_loop()

        def calls(action: Callable[[], object]) -> Callable[[int], None]:
            def run(count: int) -> None:
                for _ in range(count):
                    action()

            return run

        def check(result: tools.ToolResult) -> None:
            assert not result.is_error, result.text

        async def gathered() -> None:
            results = await asyncio.gather(*(tools.aexecute(n, a, client=client) for n, a in turn_calls))
            for result in results:
                check(result)

        async def amany() -> None:
            for result in await tools.aexecute_many(turn_calls, client=client):
                check(result)

        def many() -> None:
            for result in tools.execute_many(turn_calls, client=client):
                check(result)

        def serial() -> None:
            for name, args in turn_calls:
                check(tools.execute(name, args, client=client))

        side_by_side = ThreadPoolExecutor(max_workers=4, thread_name_prefix="bench-client")

        def clients() -> None:
            list(side_by_side.map(lambda call: client.call_tool(endpoint, "echo", call[1]), turn_calls))

        # The warm call without its own stamp: the floor's outcome statement carries it.
        unstamped = McpClient(
            connection=ConnectionSettings(
                allow_private_networks=True, resolver=lambda host, port: ["127.0.0.1"], ca_bundle=str(ca)
            )
        )
        floors = [_LedgerFloor(vendor) for _ in range(4)]

        def at_floor(ledger: _LedgerFloor, text: str) -> None:
            ledger.around(lambda: unstamped.call_tool(endpoint, "echo", {"text": text}))

        def floors_at_once() -> None:
            list(side_by_side.map(at_floor, floors, [f"hi {i}" for i in range(4)]))

        contenders: dict[str, Callable[[int], None]] = {
            FLOOR: floor(url, ca, proxy_port),
            CLIENT: calls(lambda: client.call_tool(endpoint, "echo", arguments)),
            CLIENTS: calls(clients),
            LEDGER_FLOOR: calls(lambda: at_floor(floors[0], "hi")),
            LEDGER_FLOORS: calls(floors_at_once),
            EXECUTE: calls(lambda: check(tools.execute("mcp_bench_echo", arguments, client=client))),
            MANY: calls(many),
            GATHERED: calls(lambda: loop.run_until_complete(gathered())),
            AMANY: calls(lambda: loop.run_until_complete(amany())),
            SERIAL: calls(serial),
        }
        times: dict[str, list[float]] = {name: [] for name in contenders}
        for run in contenders.values():
            run(2)  # warm: imports, the era verdict, connections, pool and writer threads
        for _ in range(rounds):
            for name, run in contenders.items():
                run(1)  # untimed: the connections this contender needs are warm
                started = time.perf_counter()
                run(ops)
                times[name].append((time.perf_counter() - started) * 1000 / ops)
        loop.close()
        side_by_side.shutdown()
        for each in floors:
            each.close()
        process_pool().clear()
    ms = {name: statistics.median(values) for name, values in times.items()}

    def paired(name: str, compare: Callable[[float, float], float], base: str = CLIENT) -> float:
        """The median, over rounds, of ``name`` against ``base`` (the warm call) of the same
        round: a drift of the machine between rounds moves both alike."""
        return statistics.median(compare(a, b) for a, b in zip(times[name], times[base], strict=True))

    label = "PostgreSQL"
    if vendor == "sqlite":
        label = "SQLite, WAL" if os.environ.get("BENCH_SQLITE_WAL") else "SQLite, rollback journal"
    rows = []
    for name, value in ms.items():
        rows.append(
            f"| {label} | {name} | {value:7.1f} ms | {value / ms[FLOOR]:5.2f}x | {value / ms[CLIENT]:5.2f}x |"
        )
    differences = [execute - warm for execute, warm in zip(times[EXECUTE], times[CLIENT], strict=True)]
    over = statistics.median(differences)
    # The middle half of the rounds: how far one run's median can move on this machine.
    spread = ""
    if len(differences) > 1:
        low, _, high = statistics.quantiles(differences, n=4)
        spread = f"; middle half of rounds {low:+.1f} to {high:+.1f}"
    rows.append(
        f"| {label} | target: `execute()` ≤ 3 ms over the warm call (same round{spread}) "
        f"| {over:+7.1f} ms | | {'met' if over <= 3 else 'MISSED'} |"
    )
    floor_over = paired(LEDGER_FLOOR, lambda floor, warm: floor - warm)
    ours = paired(EXECUTE, lambda execute, floor: execute - floor, LEDGER_FLOOR)
    rows.append(
        f"| {label} | the ledger's floor over the warm call; `execute()` over that floor (same round) "
        f"| {floor_over:+7.1f} ms | {ours:+5.1f} ms | |"
    )
    for name in (MANY, GATHERED, AMANY):
        ratio = paired(name, lambda turn, warm: turn / warm)
        rows.append(
            f"| {label} | target: {name[13:]} ≤ 1.5x one call (same round) | {ratio:5.2f}x | | "
            f"{'met' if ratio <= 1.5 else 'MISSED'} |"
        )
    return rows


class _LedgerFloor:
    """One connection of the database driver itself, on the bench's database, and the least a
    ledger row can be: a key, a status, two times."""

    def __init__(self, vendor: str) -> None:
        from django.db import connection

        settings = connection.settings_dict
        self.vendor = vendor
        self.raw: Any
        if vendor == "postgresql":
            import psycopg

            self.raw = psycopg.connect(
                dbname=settings["NAME"],
                host=settings["HOST"] or None,
                port=settings["PORT"] or None,
                user=settings["USER"] or None,
                autocommit=True,
            )
            self.mark = "%s"
            self.insert = "INSERT INTO bench_floor VALUES (%s, 'running', now(), NULL)"
            # The outcome and the server's stamp in one statement (a data-modifying WITH): the
            # fewest round trips for both (nr_llm runs the two statements in one transaction).
            self.finish = [
                "WITH stamp AS (UPDATE nr_llm_mcpserver SET last_contact = now(), last_latency_ms = %s "
                "WHERE identifier = 'bench') UPDATE bench_floor SET status = 'succeeded', finished = now() "
                "WHERE id = %s"
            ]
            table = (
                "CREATE TABLE IF NOT EXISTS bench_floor (id uuid PRIMARY KEY, status varchar(20) NOT NULL, "
            )
            table += "started timestamptz NOT NULL, finished timestamptz)"
        else:
            import sqlite3

            self.raw = sqlite3.connect(settings["NAME"], isolation_level=None, check_same_thread=False)
            init = settings["OPTIONS"].get("init_command")
            if init:
                self.raw.executescript(init)
            self.insert = "INSERT INTO bench_floor VALUES (?, 'running', datetime('now'), NULL)"
            # One transaction for both, as nr_llm commits them once.
            self.finish = [
                "BEGIN",
                "UPDATE nr_llm_mcpserver SET last_contact = datetime('now'), last_latency_ms = ? "
                "WHERE identifier = 'bench'",
                "UPDATE bench_floor SET status = 'succeeded', finished = datetime('now') WHERE id = ?",
                "COMMIT",
            ]
            table = (
                "CREATE TABLE IF NOT EXISTS bench_floor (id text PRIMARY KEY, status varchar(20) NOT NULL, "
            )
            table += "started datetime NOT NULL, finished datetime)"
        self.raw.execute(table)

    def around(self, call: Callable[[], object]) -> None:
        import uuid

        key = uuid.uuid4() if self.vendor == "postgresql" else str(uuid.uuid4())
        self.raw.execute(self.insert, (key,))
        started = time.perf_counter()
        call()
        latency = int((time.perf_counter() - started) * 1000)
        if self.vendor == "postgresql":
            self.raw.execute(self.finish[0], (latency, key))
            return
        begin, stamp, outcome, commit = self.finish
        self.raw.execute(begin)
        self.raw.execute(stamp, (latency,))
        self.raw.execute(outcome, (key,))
        self.raw.execute(commit)

    def close(self) -> None:
        self.raw.close()


def _serve_proxy(upstream: int, delay: float) -> None:
    """bench/wan.py's latency proxy as a process: prints ``PORT <n>``, serves until stopped."""
    import signal

    from bench.wan import LatencyProxy

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with LatencyProxy(upstream, delay) as proxy:
        print(f"PORT {proxy.port}", flush=True)
        stop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--delay-ms", type=float, default=20.0, help="added each way (default 20)")
    parser.add_argument("--rounds", type=int, default=9, help="rounds per contender (median)")
    parser.add_argument("--ops", type=int, default=10, help="calls (or turns) per round")
    parser.add_argument(
        "--postgres",
        default="postgres://postgres@127.0.0.1:5432/nrllm_bench_turn",
        help="PostgreSQL URL whose test_ database is created and dropped; 'none' skips it",
    )
    parser.add_argument(
        "--databases",
        default="sqlite,wal,postgres",
        help="which to run, comma-separated (default: all three)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--proxy", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.proxy:
        _serve_proxy(int(args.proxy[0]), float(args.proxy[1]))
        return
    if args.child:
        child(args.delay_ms / 1000, args.rounds, args.ops)
        return
    known = {
        "sqlite": {"DATABASE_URL": ""},
        "wal": {"DATABASE_URL": "", "BENCH_SQLITE_WAL": "1"},
        "postgres": {"DATABASE_URL": args.postgres},
    }
    chosen = args.databases.split(",")
    if args.postgres == "none":
        chosen = [name for name in chosen if not name.startswith("postgres")]
    unknown = sorted(set(chosen) - set(known))
    if unknown:
        parser.error(f"unknown database {', '.join(unknown)}: choose from {', '.join(known)}")
    databases = [known[name] for name in chosen]
    rows = [
        f"{args.delay_ms:g} ms each way ({2 * args.delay_ms:g} ms round trip), TLS by name, SDK server, "
        f"{args.rounds} rounds of {args.ops}",
        "",
        "| database | what | per call or turn | vs floor (one POST) | vs one warm client call |",
        "|---|---|---:|---:|---:|",
    ]
    for extra in databases:
        env = {key: value for key, value in os.environ.items() if key != "DATABASE_URL"}
        env.update({key: value for key, value in extra.items() if value})
        command = [
            sys.executable,
            "-m",
            "bench.turn",
            "--child",
            f"--delay-ms={args.delay_ms}",
            f"--rounds={args.rounds}",
            f"--ops={args.ops}",
        ]
        done = subprocess.run(
            command, env=env, cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True
        )
        if done.returncode:
            sys.stderr.write(done.stderr)
            raise SystemExit(f"the {extra} run failed")
        rows += done.stdout.strip().splitlines()
    print("\n".join(rows))


if __name__ == "__main__":
    main()
