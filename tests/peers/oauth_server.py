"""The authorization-server peer: django-oauth-toolkit in a Django site of its own, under gunicorn.

``python -m tests.peers.oauth_server --dir DIR [--port N | --fd FD] [--access-token-seconds S]``:
DIR holds seed.json (the user and clients to create, see tests/peers/oauth_site/seed.py), and
receives the SQLite file and the request log. Listens on 127.0.0.1 (an OS-chosen port unless
--port; or on the listening socket FD its parent bound, so that the parent knows the issuer
URL before this process has started), migrates, seeds, prints ``PORT <n>`` and serves until
terminated.

``--certfile F --keyfile K --public-host NAME`` serves https with that certificate, its issuer
``https://NAME:<port>`` (NAME is let past ALLOWED_HOSTS); each TLS ClientHello's server name
(SNI, null for none) is appended to DIR/sni.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
from collections.abc import Container
from pathlib import Path
from typing import Any


def shared_settings(known: Container[str]) -> dict[str, Any]:
    """project/gunicorn_conf.py's settings this gunicorn knows, as its config-file loader reads
    them: one an older gunicorn lacks (the control socket's, before 25.1) is skipped."""
    from project import gunicorn_conf

    return {key: value for key, value in vars(gunicorn_conf).items() if key in known}


def _noting_sni(log: Path) -> Any:
    """gunicorn's ssl_context hook: its own context, noting each ClientHello's server name."""

    def note(_sock: Any, name: str | None, _context: Any) -> None:
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps({"sni": name}) + "\n")

    def ssl_context(_config: Any, default_ssl_context_factory: Any) -> Any:
        context = default_ssl_context_factory()
        context.sni_callback = note
        return context

    return ssl_context


def _serve(sock: socket.socket, threads: int, tls: dict[str, Any]) -> None:
    from gunicorn.app.base import BaseApplication

    from tests.peers.oauth_site.wsgi import application

    class Peer(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            options: dict[str, Any] = {
                # The socket was bound (and the port announced) before Django was configured,
                # because the issuer URL in the settings needs the port.
                "bind": [f"fd://{sock.fileno()}"],
                "workers": 1,
                # Threads, so two clients refreshing at the same moment reach the server at
                # the same moment; SQLite's write lock then orders them, as a real DB would.
                "worker_class": "gthread",
                "threads": threads,
                "accesslog": None,
                "graceful_timeout": 3,
                "timeout": 60,
                "proc_name": "oauth-peer",
                **tls,
            }
            for key, value in {**options, **shared_settings(self.cfg.settings)}.items():
                self.cfg.set(key, value)

        def load(self) -> Any:
            return application

    Peer().run()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--fd", type=int, default=None)
    parser.add_argument("--access-token-seconds", type=int, default=300)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--certfile")
    parser.add_argument("--keyfile")
    parser.add_argument("--public-host", default="127.0.0.1")
    args = parser.parse_args()

    if args.fd is not None:
        sock = socket.socket(fileno=args.fd)
    else:
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", args.port))
        sock.listen(128)
    sock.set_inheritable(True)
    port = sock.getsockname()[1]
    os.environ["OAUTH_PEER_DIR"] = args.dir
    scheme = "https" if args.certfile else "http"
    os.environ["OAUTH_PEER_ISSUER"] = f"{scheme}://{args.public_host}:{port}"
    os.environ["OAUTH_PEER_HOST"] = args.public_host
    tls: dict[str, Any] = {}
    if args.certfile:
        tls = {
            "certfile": args.certfile,
            "keyfile": args.keyfile,
            "ssl_context": _noting_sni(Path(args.dir) / "sni.jsonl"),
        }
    os.environ["OAUTH_PEER_ACCESS_TOKEN_SECONDS"] = str(args.access_token_seconds)
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.peers.oauth_site.settings"

    import django
    from django.core.management import call_command
    from django.db import connections

    django.setup()
    call_command("migrate", run_syncdb=True, verbosity=0, interactive=False)
    from tests.peers.oauth_site.seed import seed

    seed()
    # Gunicorn forks its worker from this process: no SQLite handle may cross the fork.
    connections.close_all()
    # Early connections wait in the listen backlog until the worker accepts them.
    print(f"PORT {port}", flush=True)
    _serve(sock, args.threads, tls)


if __name__ == "__main__":
    main()
