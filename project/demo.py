"""`make demo`: migrate, seed an admin and a demo MCP server, and serve the site.

Everything it starts is a child process; Ctrl-C stops them all.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
VAR = BASE_DIR / "var"
MCP_PORT = int(os.environ.get("DEMO_MCP_PORT", "8765"))
SITE_PORT = int(os.environ.get("DEMO_SITE_PORT", "8000"))


def _wait_for_port(port: int, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise SystemExit(f"nothing is listening on 127.0.0.1:{port} after {seconds:g} s")


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def _admin_password() -> str:
    # One password per checkout, kept in the ignored var/ folder, so a re-run reuses it.
    path = VAR / "demo-admin-password"
    if not path.exists():
        path.write_text(secrets.token_urlsafe(12))
        path.chmod(0o600)
    return path.read_text().strip()


def _seed() -> str:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from nr_llm.models import DataClass, McpServer

    call_command("migrate", verbosity=0)
    password = _admin_password()
    user_model = get_user_model()
    user, _ = user_model.objects.get_or_create(
        username="admin", defaults={"is_staff": True, "is_superuser": True, "email": "admin@example.invalid"}
    )
    user.is_staff = user.is_superuser = True
    user.set_password(password)
    user.save()
    McpServer.objects.update_or_create(
        identifier="demo",
        defaults={
            "name": "Demo MCP server",
            "description": "The official Python MCP SDK, started by `make demo` on 127.0.0.1.",
            "url": f"http://127.0.0.1:{MCP_PORT}/mcp",
            "data_class": DataClass.PUBLIC_CONTENT,
            "enabled": True,
        },
    )
    return password


def main() -> None:
    VAR.mkdir(exist_ok=True)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    os.environ.setdefault("DEBUG", "true")
    # The demo server is on loopback, which nr_llm refuses unless told otherwise.
    os.environ["NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS"] = "true"
    for port in (MCP_PORT, SITE_PORT):
        if not _port_free(port):
            raise SystemExit(f"127.0.0.1:{port} is in use; set DEMO_MCP_PORT / DEMO_SITE_PORT to free ports.")

    password = _seed()
    # Own sessions: a terminal Ctrl-C reaches only this process, which then stops
    # each child once and cleanly, instead of every child tracing back at once.
    children: list[subprocess.Popen[bytes]] = []
    try:
        children.append(
            subprocess.Popen(
                [sys.executable, "-m", "project.demo_mcp_server", "--port", str(MCP_PORT)],
                start_new_session=True,
            )
        )
        _wait_for_port(MCP_PORT)
        children.append(
            subprocess.Popen(
                # gunicorn behind the disconnect-aware WSGI wrapper, not runserver: runserver
                # cannot tell a client that left from one that waits (docs/observability.md).
                [
                    sys.executable,
                    "-m",
                    "gunicorn",
                    "project.wsgi:application",
                    "--bind",
                    f"127.0.0.1:{SITE_PORT}",
                    "--worker-class",
                    "gthread",
                    "--threads",
                    "4",
                ],
                cwd=BASE_DIR,
                start_new_session=True,
            )
        )
        _wait_for_port(SITE_PORT)
        print(
            "\n"
            f"  nr-llm demo is up:  http://127.0.0.1:{SITE_PORT}/admin/\n"
            f"  login:              admin / {password}\n"
            f"  demo MCP server:    http://127.0.0.1:{MCP_PORT}/mcp (seeded as 'demo')\n"
            f"  watch a 499:        curl -m 1 'http://127.0.0.1:{SITE_PORT}/demo/slow/?seconds=5'\n"
            "  Ctrl-C stops everything.\n",
            flush=True,
        )
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()


if __name__ == "__main__":
    main()
