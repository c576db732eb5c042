"""Open a page in real headless Chromium over the DevTools protocol, as a person would see it.

Only aiohttp (a sparkrig dependency) is used to speak the protocol, so no browser-automation
package is needed: Chromium comes from Debian's package (`scripts/ensure-test-tools`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
# Flags from the machine notes: without the background-networking ones Chromium keeps trying
# hosts this closed network refuses.
_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
    "--window-size=1400,1000",
)

# Counts, for each rectangle, the share of screenshot pixels that are not the page background.
_INK_SCRIPT = """
async (png, rects) => {
  const image = new Image();
  image.src = 'data:image/png;base64,' + png;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  return rects.map(r => {
    const data = context.getImageData(r.x, r.y, Math.max(1, r.width), Math.max(1, r.height)).data;
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) {
      if (data[i] < 235 || data[i + 1] < 235 || data[i + 2] < 235) ink++;
    }
    return ink / (data.length / 4);
  });
}
"""


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return found
    return None


@dataclass
class PageView:
    """What the browser showed: the screenshot, each chart's box and ink, and any errors."""

    screenshot: bytes
    charts: list[dict[str, float]]
    ink: list[float]
    errors: list[str] = field(default_factory=list)


class _Session:
    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self.ids)
        await self.socket.send_json({"id": number, "method": method, "params": params})
        while True:
            message = json.loads((await self.socket.receive(timeout=30)).data)
            if message.get("id") == number:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))
            self.events.append(message)

    async def evaluate(self, expression: str) -> Any:
        result = await self.call(
            "Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(str(result["exceptionDetails"]))
        return result["result"].get("value")


def view_page(page: Path, chromium: str, height: int | None = None) -> PageView:
    """Start Chromium with a fresh profile, look at `page` (its whole length, or its first
    `height` pixels), stop Chromium and every process it started (its own session), then remove
    the profile."""
    profile = tempfile.mkdtemp(prefix="sparkrig-chromium-")
    try:
        proc = subprocess.Popen(
            [chromium, *_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            port = _devtools_port(Path(profile) / "DevToolsActivePort")
            return asyncio.run(_view(page.resolve().as_uri(), port, height))
        finally:
            _stop_session(proc)
    finally:
        _remove_profile(Path(profile))


def _stop_session(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to Chromium's whole session (renderers and helpers write into the profile after
    the browser process is gone), SIGKILL what is left after 10 s."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline and _session_alive(proc.pid):
            time.sleep(0.05)
        if not _session_alive(proc.pid):
            return


def _session_alive(session: int) -> bool:
    try:
        os.killpg(session, 0)
    except ProcessLookupError:
        return False
    return True


def _remove_profile(profile: Path) -> None:
    """The profile goes even when a late write races the removal (a CI run once met a
    'Directory not empty' there): a few tries, a moment apart."""
    for _ in range(20):
        shutil.rmtree(profile, ignore_errors=True)
        if not profile.exists():
            return
        time.sleep(0.1)
    shutil.rmtree(profile)  # still there: say why


def _devtools_port(port_file: Path) -> str:
    for _ in range(300):
        if port_file.exists() and port_file.read_text().strip():
            return port_file.read_text().split()[0]
        time.sleep(0.1)
    raise RuntimeError(f"Chromium wrote no {port_file.name} in 30 s")


# The page's own height: not less than the window's, which a short page would leave blank.
_PAGE_SIZE = (
    "({w: document.documentElement.scrollWidth, h: Math.min("
    "document.documentElement.scrollHeight, "
    "Math.ceil(document.body.getBoundingClientRect().bottom) + 16)})"
)
_CHART_BOXES = (
    "[...document.querySelectorAll('svg')].map(s => { const r = s.getBoundingClientRect(); "
    "return {x: Math.round(r.x + scrollX), y: Math.round(r.y + scrollY), "
    "width: Math.round(r.width), height: Math.round(r.height)}; })"
)


async def _view(url: str, port: str, height: int | None = None) -> PageView:
    async with aiohttp.ClientSession() as http:
        async with http.get(f"http://127.0.0.1:{port}/json/list") as response:
            targets = await response.json()
        target = next(t for t in targets if t.get("type") == "page")
        async with http.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as socket:
            session = _Session(socket)
            for domain in ("Page", "Runtime", "Log"):
                await session.call(f"{domain}.enable")
            await session.call("Page.navigate", url=url)
            while not any(e.get("method") == "Page.loadEventFired" for e in session.events):
                session.events.append(json.loads((await socket.receive(timeout=30)).data))
            size = await session.evaluate(_PAGE_SIZE)
            await session.call(
                "Emulation.setDeviceMetricsOverride",
                width=size["w"],
                height=min(size["h"], height or size["h"]),
                deviceScaleFactor=1,
                mobile=False,
            )
            charts = await session.evaluate(_CHART_BOXES)
            shot = await session.call(
                "Page.captureScreenshot", format="png", captureBeyondViewport=height is None
            )
            png = shot["data"]
            ink = await session.evaluate(
                f"({_INK_SCRIPT})({json.dumps(png)}, {json.dumps(charts)})"
            )
            errors = [
                json.dumps(event.get("params"))[:300]
                for event in session.events
                if event.get("method") == "Runtime.exceptionThrown"
                or (
                    event.get("method") == "Log.entryAdded"
                    and event["params"]["entry"].get("level") == "error"
                )
            ]
    return PageView(screenshot=base64.b64decode(png), charts=charts, ink=ink, errors=errors)
