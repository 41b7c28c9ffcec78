"""Serving an ASGI app over HTTP for the front-ends that listen (`mcp --http`, `web`): the port bound
first, so one in use is said at once in one line, then uvicorn on that socket until SIGTERM or Ctrl+C,
without raising the signal again, so the caller closes memory (and posts its last log lines) before the
process ends. A leaf: it imports nothing of the bot."""

from __future__ import annotations

import errno
import signal
import socket
from collections.abc import Callable
from typing import Any, Literal


class CannotListen(Exception):
    """The address cannot be served (the port is in use, the host is not this machine's)."""


def listen(host: str, port: int) -> socket.socket:
    """The port, bound: uvicorn serves this socket, so it never has to say `[Errno 98]` itself."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        # IPPROTO_TCP, not 0: asyncio turns Nagle off only on sockets that say they are TCP, and with it on,
        # a response written as headers then body waits for the client's delayed ACK (40 ms on Linux)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    except OSError as exc:
        raise CannotListen(f"cannot serve HTTP on {host}: {exc.strerror or exc}") from exc
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CannotListen(
                f"port {port} on {host} is already in use (another server?): choose another with --port"
            ) from exc
        raise CannotListen(f"cannot serve HTTP on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


def url_of(host: str, sock: socket.socket, path: str) -> str:
    """The URL a bound socket serves `path` at (an IPv6 host in brackets)."""
    return f"http://{f'[{host}]' if ':' in host else host}:{sock.getsockname()[1]}{path}"


async def serve(
    app: Any, sock: socket.socket, started: Callable[[], None], *, lifespan: Literal["on", "off"]
) -> None:
    """Serve `app` on `sock` until a signal; `started` once it answers. Uvicorn's access log is off:
    its lines hold query strings, which the front-ends keep out of logs."""
    import uvicorn

    class Server(uvicorn.Server):
        """Stops on SIGTERM or SIGINT as uvicorn does, without raising the signal again once stopped."""

        def handle_exit(self, sig: int, frame: Any) -> None:
            self.force_exit = self.should_exit and sig == signal.SIGINT
            self.should_exit = True

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                started()

    config = uvicorn.Config(app, log_level="warning", lifespan=lifespan, access_log=False)
    await Server(config).serve(sockets=[sock])
