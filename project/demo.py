"""`make demo`: migrate, seed an admin and three demo MCP servers, and serve the site.

Besides the site (gunicorn) and a demo MCP server, it starts an OAuth-protected MCP server
and its authorization server (the OAuth test peers, tests/peers/README.md), seeded as the
server "protected" with a pre-registered client: Connect on its admin page, sign in at the
authorization server as the printed operator, and its tools can be imported and tried.
The server "guarded" is the demo MCP server behind an approval step: a call of its tools
waits under Approvals in the admin until an operator approves it, then runs once resumed.

Every child runs in a session of its own, so a signal meant for the demo reaches only
this process, which then stops each child's whole process group once and cleanly:
SIGINT (Ctrl-C), SIGTERM (a process manager, ``timeout``, or make, which passes its own
SIGTERM on to its recipe) and SIGHUP (a closed terminal) all end with no child left, one
line saying so, and exit status 0 (make itself, when it was signalled too, still dies of
the signal, but reports no failed recipe).

The site's environment is written to ``var/demo.env``; ``ENV_FILE=var/demo.env`` in front
of any ``manage.py`` command runs it against the demo (project/settings.py reads it).

Environment: ``DEMO_SITE_PORT`` (8000), ``DEMO_MCP_PORT`` (8765), ``DEMO_AUTH_PORT`` (8766),
``DEMO_PROTECTED_MCP_PORT`` (8767), ``DEMO_VAR_DIR`` (var/), ``DATABASE_URL`` (SQLite in the
var folder when unset).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

BASE_DIR = Path(__file__).resolve().parent.parent
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# gunicorn's and uvicorn's own graceful shutdown is bounded by this many seconds; the
# demo waits a little longer for each child before it kills the child's process group.
GRACE_SECONDS = 3
STOP_WAIT_SECONDS = 10.0
POLL_SECONDS = 0.2
# The authorization server's seeded user and clients. Ids are not secrets; every secret is
# made once per checkout and kept in the var folder (_kept_token).
OAUTH_OPERATOR = "operator"
OAUTH_CLIENT_ID = "nr-llm-demo"
OAUTH_RESOURCE_SERVER_CLIENT_ID = "demo-protected-mcp-server"
STOPPED = "the site, both MCP servers and the authorization server are down, their ports free"


@dataclasses.dataclass(frozen=True)
class DemoConfig:
    site_port: int
    mcp_port: int
    auth_port: int
    protected_mcp_port: int
    var_dir: Path

    @classmethod
    def from_environ(cls) -> DemoConfig:
        return cls(
            site_port=int(os.environ.get("DEMO_SITE_PORT", "8000")),
            mcp_port=int(os.environ.get("DEMO_MCP_PORT", "8765")),
            auth_port=int(os.environ.get("DEMO_AUTH_PORT", "8766")),
            protected_mcp_port=int(os.environ.get("DEMO_PROTECTED_MCP_PORT", "8767")),
            var_dir=Path(os.environ.get("DEMO_VAR_DIR") or BASE_DIR / "var").resolve(),
        )

    @property
    def ports(self) -> dict[str, int]:
        """Each port by the variable that sets it (each must be free and different)."""
        return {
            "DEMO_AUTH_PORT": self.auth_port,
            "DEMO_PROTECTED_MCP_PORT": self.protected_mcp_port,
            "DEMO_MCP_PORT": self.mcp_port,
            "DEMO_SITE_PORT": self.site_port,
        }

    @property
    def env_file(self) -> Path:
        return self.var_dir / "demo.env"

    @property
    def site_url(self) -> str:
        return f"http://127.0.0.1:{self.site_port}"

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.auth_port}"

    @property
    def protected_mcp_url(self) -> str:
        return f"http://127.0.0.1:{self.protected_mcp_port}/mcp"

    @property
    def oauth_dir(self) -> Path:
        """The authorization server's folder: its seed.json, SQLite file and request log."""
        return self.var_dir / "oauth"


@dataclasses.dataclass(frozen=True)
class OAuthSecrets:
    operator_password: str = dataclasses.field(repr=False)
    client_secret: str = dataclasses.field(repr=False)  # nr_llm's pre-registered client
    resource_server_secret: str = dataclasses.field(repr=False)  # the MCP server's, for introspection
    secret_key: str = dataclasses.field(repr=False)  # the authorization server site's SECRET_KEY

    @classmethod
    def kept(cls, config: DemoConfig) -> OAuthSecrets:
        return cls(
            operator_password=_kept_token(config.var_dir / "demo-oauth-operator-password", 12),
            client_secret=_kept_token(config.var_dir / "demo-oauth-client-secret", 32),
            resource_server_secret=_kept_token(config.var_dir / "demo-oauth-resource-server-secret", 32),
            secret_key=_kept_token(config.var_dir / "demo-oauth-secret-key", 40),
        )


class StopSignals:
    """SIGINT, SIGTERM and SIGHUP, noted for the main loop once children may exist.

    Noted rather than raised: an exception between ``Popen`` returning and the child being
    recorded would lose the child. The main loop polls ``received``.
    """

    def __init__(self) -> None:
        self.received: int | None = None

    def install(self) -> None:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._note)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        if self.received is None:
            self.received = signum

    def ignore(self) -> None:
        """A second signal must not cut the clean-up short; it is bounded by its own timeouts."""
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def _port_open(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def _wait_for_port(
    port: int, child: subprocess.Popen[bytes], stop: StopSignals, seconds: float = 30.0
) -> bool:
    """True once ``child`` listens on ``port``; False if it exited or a stop signal came first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if stop.received is not None or child.poll() is not None:
            return False
        if _port_open(port):
            return True
        time.sleep(0.1)
    raise SystemExit(f"nothing is listening on 127.0.0.1:{port} after {seconds:g} s")


def _write_private(path: Path, text: str) -> None:
    """Write a file only its owner can read, never readable by others even for a moment."""
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)


def _kept_token(path: Path, nbytes: int) -> str:
    """A random token made once per checkout and kept in the ignored var folder."""
    if not path.exists():
        _write_private(path, secrets.token_urlsafe(nbytes))
    return path.read_text().strip()


def demo_environment(config: DemoConfig) -> dict[str, str]:
    """What the demo site's settings read, every value explicit (written to the env file)."""
    database = os.environ.get("DATABASE_URL") or f"sqlite:///{config.var_dir / 'demo.sqlite3'}"
    return {
        "DEBUG": "true",
        "SECRET_KEY": _kept_token(config.var_dir / "demo-secret-key", 40),
        "DATABASE_URL": database,
        # The demo MCP server is on loopback, which nr_llm refuses unless told otherwise.
        "NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS": "true",
        # The OAuth redirect URI is built on it (nr_llm.authorization.service.redirect_uri).
        "NR_LLM_PUBLIC_BASE_URL": config.site_url,
    }


def write_env_file(config: DemoConfig, environment: dict[str, str]) -> None:
    lines = [
        "# Written by `make demo`: the demo site's environment (it holds the demo's SECRET_KEY).",
        f"# Any manage.py command against the demo: {manage_line(config)}",
        *(f"{name}={shlex.quote(value)}" for name, value in environment.items()),
    ]
    _write_private(config.env_file, "\n".join(lines) + "\n")


def _shown(path: Path) -> str:
    """A path as the user types it: relative when inside the checkout they run make in."""
    if Path.cwd() == BASE_DIR and path.is_relative_to(BASE_DIR):
        return str(path.relative_to(BASE_DIR))
    return str(path)


def manage_line(config: DemoConfig, command: str = "mcp_import demo") -> str:
    env_file = shlex.quote(_shown(config.env_file))
    python = shlex.quote(_shown(Path(sys.executable)))
    manage = shlex.quote(_shown(BASE_DIR / "manage.py"))
    return f"ENV_FILE={env_file} {python} {manage} {command}"


def _seed(config: DemoConfig, oauth: OAuthSecrets) -> tuple[str, int]:
    """Migrate and seed; returns the admin's password and the protected server's pk."""
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from nr_llm.authorization.service import redirect_uri
    from nr_llm.models import AuthPlacement, DataClass, McpServer, OAuthGrantType, OAuthRegistration
    from nr_llm.servers import credentials

    call_command("migrate", verbosity=0)
    password = _kept_token(config.var_dir / "demo-admin-password", 12)
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
            "url": f"http://127.0.0.1:{config.mcp_port}/mcp",
            "data_class": DataClass.PUBLIC_CONTENT,
            "requires_approval": False,
            "enabled": True,
        },
    )
    # The same demo MCP server behind an approval step: a call of its tools waits for an
    # operator (Approvals in the admin) and runs once approved and resumed.
    McpServer.objects.update_or_create(
        identifier="guarded",
        defaults={
            "name": "Demo MCP server, approval required",
            "description": (
                "The demo MCP server again, but every call waits for an operator's approval: "
                "import it, enable mcp_guarded_echo, call it with mcp_call, approve it under "
                "Approvals, then resume it."
            ),
            "url": f"http://127.0.0.1:{config.mcp_port}/mcp",
            "data_class": DataClass.PUBLIC_CONTENT,
            "requires_approval": True,
            "enabled": True,
        },
    )
    # The client is pre-registered with the kept secret, in the authorization server (seeded
    # below at every start) and here alike, so a second `make demo` finds them still matching.
    protected, _ = McpServer.objects.update_or_create(
        identifier="protected",
        defaults={
            "name": "Demo OAuth-protected MCP server",
            "description": (
                "The official Python MCP SDK behind OAuth 2.1 (django-oauth-toolkit), started by "
                "`make demo` on 127.0.0.1. Connect, sign in as the operator the banner names, then "
                "import its tools."
            ),
            "url": config.protected_mcp_url,
            "auth_placement": AuthPlacement.OAUTH,
            "oauth_grant_type": OAuthGrantType.AUTHORIZATION_CODE,
            "oauth_registration": OAuthRegistration.PREREGISTERED,
            "oauth_issuer": config.issuer,
            "oauth_client_id": OAUTH_CLIENT_ID,
            "oauth_client_secret_ciphertext": credentials.encrypt(oauth.client_secret),
            "oauth_scopes": "mcp:tools",
            "data_class": DataClass.PUBLIC_CONTENT,
            "requires_approval": False,
            "enabled": True,
        },
    )
    # The very URI the server's page shows, so the two cannot disagree.
    _write_oauth_seed(config, oauth, redirect_uri())
    return password, protected.pk


def _write_oauth_seed(config: DemoConfig, oauth: OAuthSecrets, callback: str) -> None:
    """The authorization server's seed.json (tests/peers/oauth_site/seed.py reads it).

    Its database is rebuilt at every start (the peer seeds a fresh one), so the redirect URI
    follows DEMO_SITE_PORT. A grant stored by an earlier run names tokens gone with it: the
    server then shows "needs reconnect", and Connect makes a new one.
    """
    # Owner only: the SQLite file holds the operator's password hash and the clients'.
    config.oauth_dir.mkdir(mode=0o700, exist_ok=True)
    config.oauth_dir.chmod(0o700)
    for name in ("oauth.sqlite3", "oauth.sqlite3-wal", "oauth.sqlite3-shm", "requests.jsonl"):
        (config.oauth_dir / name).unlink(missing_ok=True)
    seed = {
        "user": {"username": OAUTH_OPERATOR, "password": oauth.operator_password},
        "clients": [
            {
                "name": "nr-llm demo site",
                "client_id": OAUTH_CLIENT_ID,
                "client_secret": oauth.client_secret,
                "grant_type": "authorization_code",
                "redirect_uris": [callback],
            },
            {
                "name": "demo protected MCP server",
                "client_id": OAUTH_RESOURCE_SERVER_CLIENT_ID,
                "client_secret": oauth.resource_server_secret,
                "grant_type": "client_credentials",
                "redirect_uris": [],
            },
        ],
    }
    _write_private(config.oauth_dir / "seed.json", json.dumps(seed, indent=2) + "\n")


@dataclasses.dataclass(frozen=True)
class Child:
    command: list[str]
    port: int  # it is up once this port answers
    env: dict[str, str] = dataclasses.field(default_factory=dict, repr=False)  # added to ours
    # The test peers print only a "PORT <n>" line on stdout, for the tests that start them.
    quiet: bool = False


def _commands(config: DemoConfig, oauth: OAuthSecrets) -> list[Child]:
    """Each child to start, with the port that tells it is up."""
    # The OAuth test peers, as they are: django-oauth-toolkit under gunicorn, and the SDK's
    # MCP server checking each token by introspection. Secrets go by environment, never by
    # command line (which every local user can read).
    authorization_server = [
        sys.executable,
        "-m",
        "tests.peers.oauth_server",
        "--dir",
        str(config.oauth_dir),
        "--port",
        str(config.auth_port),
    ]
    protected_mcp_server = [
        sys.executable,
        "-m",
        "tests.peers.oauth_mcp_server",
        "--issuer",
        config.issuer,
        "--introspection-url",
        f"{config.issuer}/introspect/",
        "--client-id",
        OAUTH_RESOURCE_SERVER_CLIENT_ID,
        "--port",
        str(config.protected_mcp_port),
    ]
    mcp_server = [
        sys.executable,
        "-m",
        "project.demo_mcp_server",
        "--port",
        str(config.mcp_port),
        "--graceful-timeout",
        str(GRACE_SECONDS),
    ]
    # gunicorn behind the disconnect-aware WSGI wrapper, not runserver: runserver cannot
    # tell a client that left from one that waits (docs/observability.md).
    site = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "python:project.gunicorn_conf",
        "project.wsgi:application",
        "--bind",
        f"127.0.0.1:{config.site_port}",
        "--worker-class",
        "gthread",
        "--threads",
        "4",
        "--graceful-timeout",
        str(GRACE_SECONDS),
    ]
    return [
        Child(
            authorization_server, config.auth_port, {"OAUTH_PEER_SECRET_KEY": oauth.secret_key}, quiet=True
        ),
        Child(
            protected_mcp_server,
            config.protected_mcp_port,
            {"OAUTH_MCP_INTROSPECTION_SECRET": oauth.resource_server_secret},
            quiet=True,
        ),
        Child(mcp_server, config.mcp_port),
        Child(site, config.site_port),
    ]


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM to each child's process group (a gunicorn master and its workers), then SIGKILL
    to any group whose leader is still there after STOP_WAIT_SECONDS."""
    for child in reversed(children):
        if child.poll() is None:
            # Each child leads a session of its own: its pid is its process group's id.
            _signal_group(child.pid, signal.SIGTERM)
    for child in reversed(children):
        try:
            child.wait(timeout=STOP_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            _signal_group(child.pid, signal.SIGKILL)
            child.wait(timeout=STOP_WAIT_SECONDS)


def _signal_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group is already gone
        os.killpg(pgid, signum)


def _banner(config: DemoConfig, password: str, oauth: OAuthSecrets, protected_pk: int) -> str:
    site = config.site_url
    return (
        "\n"
        f"  nr-llm demo is up:  {site}/admin/\n"
        f"  login:              admin / {password}\n"
        f"  demo MCP server:    http://127.0.0.1:{config.mcp_port}/mcp (seeded as 'demo')\n"
        f"  OAuth MCP server:   {config.protected_mcp_url} (seeded as 'protected')\n"
        f"  authorization srv:  {config.issuer}/ (django-oauth-toolkit)\n"
        f"  its login:          {OAUTH_OPERATOR} / {oauth.operator_password}\n"
        f"  try OAuth:          open {site}/admin/nr_llm/mcpserver/{protected_pk}/change/ and click Connect\n"
        f"  watch a 499:        curl -m 1 '{site}/demo/slow/?seconds=5'\n"
        f"  manage.py:          {manage_line(config)}\n"
        f"                      (any manage.py command, e.g. mcp_import protected after Connect;\n"
        f"                      the environment is in {_shown(config.env_file)})\n"
        f"  see a call wait:    mcp_import guarded, enable mcp_guarded_echo under MCP tools, then\n"
        f'                      mcp_call mcp_guarded_echo --args \'{{"text": "hi"}}\' (exit 3), approve it\n'
        f"                      at {site}/admin/nr_llm/toolcallapproval/ and mcp_call --resume <id>\n"
        "  Ctrl-C stops everything.\n"
    )


def _serve(
    config: DemoConfig,
    banner: str,
    oauth: OAuthSecrets,
    children: list[subprocess.Popen[bytes]],
    stop: StopSignals,
) -> subprocess.Popen[bytes] | None:
    """Start the children; return the one that exited, or None on a stop signal."""
    specs = _commands(config, oauth)
    # All at once, then each waited for: they need one another only once a request comes.
    for spec in specs:
        # A session of its own: a terminal's Ctrl-C or hang-up reaches only this process,
        # which stops each child once and in order.
        child = subprocess.Popen(
            spec.command,
            cwd=BASE_DIR,
            start_new_session=True,
            env={**os.environ, **spec.env},
            stdout=subprocess.DEVNULL if spec.quiet else None,
        )
        children.append(child)
        if stop.received is not None:
            return None
    for child, spec in zip(children, specs, strict=True):
        if not _wait_for_port(spec.port, child, stop):
            return child if child.poll() is not None else None
    print(banner, flush=True)
    while stop.received is None:
        for child in children:
            if child.poll() is not None:
                return child
        time.sleep(POLL_SECONDS)
    return None


def main() -> None:
    config = DemoConfig.from_environ()
    config.var_dir.mkdir(parents=True, exist_ok=True)
    if len(set(config.ports.values())) != len(config.ports):
        raise SystemExit(f"the demo needs four different ports: {config.ports}")
    for name, port in config.ports.items():
        if _port_open(port):
            raise SystemExit(f"127.0.0.1:{port} is in use; set {name} to a free port.")
    environment = demo_environment(config)
    os.environ.update(environment)
    os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
    write_env_file(config, environment)
    # Until a child exists the signals keep their default effect: nothing is left behind.
    try:
        oauth = OAuthSecrets.kept(config)
        password, protected_pk = _seed(config, oauth)
    except KeyboardInterrupt:
        raise SystemExit(130) from None

    stop = StopSignals()
    stop.install()
    children: list[subprocess.Popen[bytes]] = []
    try:
        exited = _serve(config, _banner(config, password, oauth, protected_pk), oauth, children, stop)
    finally:
        stop.ignore()
        _stop(children)
    if exited is not None:
        command = shlex.join(str(part) for part in exited.args)  # type: ignore[union-attr]
        raise SystemExit(f"the demo stopped: {command} exited with {exited.returncode}")
    # A stop asked for is a clean end: exit 0 with one line, not make's "*** [demo] Terminated".
    name = signal.Signals(stop.received).name if stop.received is not None else "a stop signal"
    print(f"Stopped on {name}: {STOPPED}.", flush=True)


if __name__ == "__main__":
    main()
