"""`up --local --port N` right after `down`: the stopped server's connections wait in TIME_WAIT
for a minute, and a port check without SO_REUSEADDR called the port busy that whole minute
(llama-server itself binds it at once). Only a listener makes a port busy."""

from __future__ import annotations

import socket

import pytest

from sparkrig.errors import PortInUseError
from sparkrig.launch.local import check_port_free


def _server_closed_first() -> int:
    """A port with a connection in TIME_WAIT on the server's side, and no listener left."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    accepted.close()  # the server closes first: its side waits
    listener.close()
    client.close()
    return port


def test_a_port_whose_server_just_stopped_is_free() -> None:
    port = _server_closed_first()
    with socket.socket() as plain, pytest.raises(OSError, match="in use"):
        plain.bind(("127.0.0.1", port))  # the old check's bind: refused in TIME_WAIT
    check_port_free("127.0.0.1", port)


def test_a_port_with_a_listener_is_busy() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"port {port} on 127.0.0.1 is already in use"):
            check_port_free("127.0.0.1", port)
