"""A free port on this host and the last lines of a process's log: below every stage, so the
engine self-test (engines/) and local serving (launch/) share them."""

from __future__ import annotations

import socket
from pathlib import Path


def free_port(host: str) -> int:
    """A port the kernel reports free right now (another process may still take it first)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path, lines: int, missing: str = "(no log)") -> str:
    """The last `lines` lines of a log joined by ` | `; `missing` when it cannot be read."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return missing
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])
