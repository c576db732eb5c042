"""What went wrong talking to a server, in words that name the cause and the fix.

A URL is checked before anything is sent (scheme, host, port); an aiohttp exception is turned
into a message that says whether the host did not resolve, nothing listened on the port, the
peer does not speak HTTP, redirects looped, or a reply was a web page where JSON belongs.
"""

from __future__ import annotations

import errno
import re

import aiohttp
from yarl import URL

from sparkrig.errors import UsageError, excerpt

_TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def checked_base_url(text: str) -> str:
    """`text` as a base URL without a trailing slash or /v1; UsageError naming what is missing."""
    shown = excerpt(text, 80)
    if "://" not in text:
        raise UsageError(
            f"{shown!r} has no scheme — write it as http://{text.lstrip('/')} (or https://)"
        )
    try:
        url = URL(text)
        port = url.port
    except ValueError as exc:
        raise UsageError(f"{shown!r} is not a URL ({exc}) — write e.g. http://HOST:PORT") from exc
    if url.scheme not in ("http", "https"):
        raise UsageError(
            f"{shown!r} uses {url.scheme}://, not http:// or https:// — sparkrig speaks HTTP to "
            "OpenAI-compatible servers; write e.g. http://HOST:PORT"
        )
    if url.query_string or url.fragment:
        raise UsageError(
            f"{shown!r} has a query or fragment — give the server's base URL only, e.g. "
            f"{url.scheme}://{url.host}{f':{port}' if port else ''}"
        )
    if not url.host:
        raise UsageError(f"{shown!r} has no host — write e.g. http://127.0.0.1:8080")
    if port is not None and not 1 <= port <= 65535:
        raise UsageError(f"{shown!r} has port {port}, outside 1-65535 — fix the port")
    base = text.rstrip("/")
    return base.removesuffix("/v1")


def describe_client_error(exc: BaseException, url: str) -> str:  # noqa: PLR0911 - one per cause
    """One line for an aiohttp failure on `url`: the cause in words, then the fix."""
    host = _host_port(url)
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return (
            f"the host of {url} does not resolve ({_os_reason(exc)}) — check the host name "
            "(a typo, or a name only another machine knows)"
        )
    if isinstance(exc, aiohttp.ClientConnectorError):
        reason = _os_reason(exc)
        refused = exc.os_error is not None and exc.os_error.errno == errno.ECONNREFUSED
        if refused or "refused" in reason.lower():
            return (
                f"cannot connect to {url}: nothing is listening on {host} (connection refused) "
                "— check the server is running and the port is right (`sparkrig status` lists "
                "local instances)"
            )
        return f"cannot connect to {url} ({reason}) — check the host is up and reachable"
    if isinstance(exc, aiohttp.TooManyRedirects):
        return (
            f"{url} redirects in a loop (more than {len(exc.history)} redirects) — point the "
            "URL at the server's API itself, not a login page or proxy"
        )
    if not_http(exc):
        return (
            f"{host} does not speak HTTP (its first bytes were not an HTTP status line) — "
            "point the URL at the OpenAI-compatible server's HTTP port"
        )
    if isinstance(exc, aiohttp.ClientResponseError):
        return f"HTTP {exc.status} from {url} ({excerpt(exc.message, 80)}) — check the URL"
    if isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)):
        return (
            f"{host} closed the connection without an HTTP reply — check it is an HTTP server "
            "and read its log"
        )
    if isinstance(exc, TimeoutError):
        return f"no reply from {url} in time — check the server is not stuck or overloaded"
    return f"{exc.__class__.__name__} on {url}: {excerpt(str(exc), 120)} — check the URL"


def not_http(exc: BaseException) -> bool:
    """aiohttp's way of saying the peer's first bytes were no HTTP status line."""
    if not isinstance(exc, aiohttp.ClientResponseError) or exc.status != 400:
        return False
    message = str(exc.message).lower()
    return "status line" in message or "expected http" in message


def web_page_title(body: bytes) -> str | None:
    """The title of an HTML page (a login or proxy page), or None when `body` is not HTML."""
    start = body.lstrip()[:512].lower()
    if not (start.startswith((b"<!doctype html", b"<html")) or b"<html" in start):
        return None
    found = _TITLE.search(body[:65536])
    title = found.group(1).decode(errors="replace") if found else ""
    return excerpt(title, 60) or "untitled"


def _host_port(url: str) -> str:
    try:
        parsed = URL(url)
        return f"{parsed.host}:{parsed.port}"
    except ValueError:
        return url


def _os_reason(exc: aiohttp.ClientConnectorError) -> str:
    error = exc.os_error
    return (error.strerror if error is not None and error.strerror else None) or str(exc)
