"""Uvicorn on an OS-chosen port that announces ``PORT <n>`` (tests.peers.running)."""

import socket

import uvicorn


def main():
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # Listening before announcing: a client may connect while uvicorn still starts.
    sock.listen(128)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(
        "tests.observability.servers:asgi_application", lifespan="off", log_level="warning"
    )
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
