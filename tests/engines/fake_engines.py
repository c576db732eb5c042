"""Fake llama-server executables that behave like the machines sparkrig cannot reproduce here.

- `sigill`: dies by SIGILL at start, like a native build on a CPU without its instructions.
- `amx_vm`: dies by SIGILL while weights are repacked, and serves through the real llama-server
  when given `--no-repack`: what a VM that lists AMX but refuses the tile registers does
  (observed: `tilezero %tmm4` trapped in ggml-cpu's AMX code, reached through repacking).
- `exits`: exits with status 1 after an error line, like a build that cannot load a model.
- `hangs`: never listens, like an engine stuck at start.
- `mute`: answers /health but every completion comes back without text, like a build whose
  kernels produce nothing usable.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

_LOAD_LINES = 'echo "load_tensors: CPU_REPACK model buffer size = 50.00 MiB"\n'


_MUTE_SERVER = """
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class Mute(http.server.BaseHTTPRequestHandler):
    def _answer(self, body):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        self._answer(b'{"status": "ok"}')
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._answer(b'{"content": ""}')
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Mute).serve_forever()
"""


def write_fake(folder: Path, kind: str, real_server: Path | None = None) -> Path:
    """Write the fake called `kind` as `folder/llama-server` (and a copy as ggml-rpc-server)."""
    bodies = {
        "sigill": f"{_LOAD_LINES}kill -ILL $$\n",
        "exits": 'echo "error: failed to load model" >&2\nexit 1\n',
        "hangs": 'echo $$ > "$0.pid"\nexec sleep 600\n',  # the pid, to prove it was stopped
    }
    if kind == "amx_vm":
        assert real_server is not None
        bodies["amx_vm"] = (
            'for arg in "$@"; do\n'
            f'  [ "$arg" = "--no-repack" ] && exec {shlex.quote(str(real_server))} "$@"\n'
            "done\n"
            f'{_LOAD_LINES}echo "llama threadpool init, n_threads = 1"\nkill -ILL $$\n'
        )
    if kind == "real":
        assert real_server is not None
        bodies["real"] = f'exec {shlex.quote(str(real_server))} "$@"\n'
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "mute":
        script = folder / "mute_server.py"
        script.write_text(_MUTE_SERVER)
        bodies["mute"] = f'exec {shlex.quote(sys.executable)} {shlex.quote(str(script))} "$@"\n'
    binary = folder / "llama-server"
    binary.write_text("#!/bin/sh\n" + bodies[kind])
    binary.chmod(0o755)
    rpc = folder / "ggml-rpc-server"
    rpc.write_text(binary.read_text())
    rpc.chmod(0o755)
    return binary
