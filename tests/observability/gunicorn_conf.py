"""Gunicorn on an OS-chosen port that announces ``PORT <n>`` (tests.peers.running)."""

from project.gunicorn_conf import *  # noqa: F403 - the settings every gunicorn here shares

bind = ["127.0.0.1:0"]
workers = 1
accesslog = None
graceful_timeout = 5


def when_ready(server):
    print(f"PORT {server.LISTENERS[0].sock.getsockname()[1]}", flush=True)
