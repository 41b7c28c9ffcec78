"""The socket the listening front-ends (`web`, `mcp --http`) serve on."""

from __future__ import annotations

import asyncio
import socket

import pytest

from bot.http_serving import CannotListen, listen


async def test_connections_on_the_served_socket_send_small_writes_at_once() -> None:
    """asyncio turns Nagle's algorithm off only on sockets that declare TCP; without that, a response
    written as headers and then body waits 40 ms for the client's delayed ACK (every dashboard page did)."""
    sock = listen("127.0.0.1", 0)
    nodelay: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        conn = writer.get_extra_info("socket")
        nodelay.set_result(conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        writer.close()

    server = await asyncio.start_server(accepted, sock=sock)
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", sock.getsockname()[1])
        assert await asyncio.wait_for(nodelay, 5) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()


def test_a_port_in_use_is_said_in_one_line() -> None:
    taken = listen("127.0.0.1", 0)
    taken.listen()
    try:
        with pytest.raises(CannotListen, match=r"^port \d+ on 127.0.0.1 is already in use"):
            listen("127.0.0.1", taken.getsockname()[1])
    finally:
        taken.close()
