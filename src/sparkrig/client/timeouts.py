"""The client's three timeouts (connect, first byte, idle between events), each named in the
error it ends a request with. Defaults and their reasons live in sparkrig.defaults; each can be
changed per run through its environment variable."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import aiohttp

from sparkrig import defaults
from sparkrig.errors import UsageError
from sparkrig.outside_numbers import OutsideNumberError, parse_float


def seconds_from_env(name: str, default: float) -> float:
    """A timeout in seconds from environment variable `name`, or `default` when unset."""
    text = os.environ.get(name)
    if not text:
        return default
    try:
        value = parse_float(text, source=name, field="seconds", ascii_digits=False)
    except OutsideNumberError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name}={text!r} is not a number of seconds above 0 — fix or unset it")
    return value


@dataclass(frozen=True)
class Timeouts:
    connect_s: float
    first_byte_s: float
    idle_s: float
    request_s: float

    @classmethod
    def from_env(
        cls,
        *,
        request_s: float = defaults.REQUEST_TIMEOUT_S,
        connect_s: float | None = None,
        first_byte_s: float | None = None,
        idle_s: float | None = None,
    ) -> Timeouts:
        """Values left at None come from their environment variable, else the defaults."""
        return cls(
            connect_s=connect_s
            or seconds_from_env(defaults.CONNECT_TIMEOUT_ENV, defaults.CONNECT_TIMEOUT_S),
            first_byte_s=first_byte_s
            or seconds_from_env(defaults.FIRST_BYTE_TIMEOUT_ENV, defaults.FIRST_BYTE_TIMEOUT_S),
            idle_s=idle_s
            or seconds_from_env(defaults.STREAM_IDLE_TIMEOUT_ENV, defaults.STREAM_IDLE_TIMEOUT_S),
            request_s=request_s,
        )

    def for_requests(self) -> aiohttp.ClientTimeout:
        """aiohttp's part: connect and the whole-request ceiling (first byte and idle are
        the client's own deadline, which aiohttp cannot express per phase)."""
        return aiohttp.ClientTimeout(total=self.request_s, sock_connect=self.connect_s)

    def for_metadata(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(
            total=min(self.request_s, defaults.METADATA_TIMEOUT_S), sock_connect=self.connect_s
        )

    def message(
        self, url: str, exc: TimeoutError, *, ours: bool, first_byte_seen: bool, events: int
    ) -> str:
        """Which timeout fired, in words, with what to do about it. `ours`: the client's own
        deadline (first byte or idle) fired, not aiohttp's."""
        if isinstance(exc, aiohttp.ConnectionTimeoutError):
            return (
                f"connect timeout: no TCP connection to {url} within {self.connect_s:g} s — "
                "check the host is up and reachable (a firewall dropping packets looks like "
                f"this), or set {defaults.CONNECT_TIMEOUT_ENV}"
            )
        if not ours:
            return (
                f"request timeout: the reply from {url} took more than {self.request_s:g} s in "
                "all — ask for fewer tokens"
            )
        if not first_byte_seen:
            return (
                f"first-byte timeout: {url} accepted the request but sent nothing for "
                f"{self.first_byte_s:g} s — check the server is not stuck (its log, its queue); "
                f"a very long cold prefill needs more: set {defaults.FIRST_BYTE_TIMEOUT_ENV}"
            )
        return (
            f"idle timeout: {url} sent {events} events, then nothing for {self.idle_s:g} s — "
            "the server stalled mid-reply; check its log (or set "
            f"{defaults.STREAM_IDLE_TIMEOUT_ENV} if it is only slow)"
        )
