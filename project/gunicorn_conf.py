"""Settings every gunicorn this repository starts shares: the demo's site and authorization
server, the observability test peers and the benchmark (``-c python:project.gunicorn_conf``,
or tests/peers/oauth_server.py reading them).

No control socket: since gunicorn 25.1 each master listens on one default path per user
(``$XDG_RUNTIME_DIR/gunicorn.ctl`` or ``~/.gunicorn/gunicorn.ctl``), so the demo's two would
clash with each other and with a site's own gunicorn; nothing here uses ``gunicornc``. An older
gunicorn (pyproject allows 22+) has no control socket and skips a setting it does not know.
"""

control_socket_disable = True
# Warnings and errors only: the start and stop lines of each would bury the demo's banner, its
# one "stopped" line, and the tests' output.
loglevel = "warning"
