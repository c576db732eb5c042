"""vLLM's CPU build serving the bundled model for the whole test session, started by the command a
user types (`sparkrig up FILE --apply`, examples/vllm-cpu.toml's shape) and stopped by `sparkrig
down FILE --apply` when the session ends, even when tests fail.

Its boot takes minutes on 2 cores, so it starts as soon as collection shows a test that needs it
(conftest's `pytest_collection_modifyitems`), and runs beside the tests before them; the fixture
`vllm_cpu` waits for it. `make test` installs the build first (`sparkrig engine install
vllm-cpu`); a bare `pytest` installs it in the fixture when it is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from sparkrig import defaults
from sparkrig.launch.local import free_port
from sparkrig.paths import STATE_ENV, cache_dir

SPARKRIG = str(Path(sys.executable).parent / "sparkrig")
NAME = "vllm-cpu-session"
SERVED_NAME = "smollm2-135m-instruct"
FIXTURE = "vllm_cpu"
BOOT_LIMIT_S = 1500  # the first boot compiles with torch inductor: minutes on 2 busy cores
BOOT_NICENESS = 15


def cluster_text(port: int, name: str = NAME, profile_extra: str = "") -> str:
    """The session's cluster file: examples/vllm-cpu.toml with a free port, the JIT cache kept
    under sparkrig's cache folder (so a later session's boot finds its compiled model)."""
    return f"""name = "{name}"
[[nodes]]
name = "cpu"
management = "127.0.0.1/8"
[executor]
kind = "local"
[engine]
kind = "vllm"
device = "cpu"
version = "0.32"
api_host = "127.0.0.1"
port = {port}
jit_cache_dir = "{cache_dir() / "vllm-cpu-jit"}"
ready_timeout_s = {BOOT_LIMIT_S}
[model]
path = "bundled"
served_name = "{SERVED_NAME}"
[profile]
max_model_len = 4096
max_num_seqs = 8
cpu_kvcache_gib = {defaults.VLLM_CPU_KVCACHE_GIB}
{profile_extra}
"""


def pair_cluster_text(port: int, master_port: int, name: str, profile_extra: str = "") -> str:
    """examples/pair-vllm-cpu.toml's two nodes as two loopback addresses of this machine (local
    executors): the worker headless first, then the head. Their control interface is `lo`: the
    plan's default, a DGX Spark's enP7s7, is not here, and gloo refuses a GLOO_SOCKET_IFNAME it
    cannot find ("Unable to find address for: enP7s7")."""
    one = cluster_text(port, name=name, profile_extra=profile_extra)
    nodes = (
        'cables = ["a.p0 <-> b.p1"]\n[[nodes]]\nname = "a"\nmanagement = "127.0.0.1/8"\n'
        'management_interface = "lo"\n[[nodes]]\nname = "b"\nmanagement = "127.0.0.2/8"\n'
        'management_interface = "lo"\n'
    )
    one = one.replace('[[nodes]]\nname = "cpu"\nmanagement = "127.0.0.1/8"\n', nodes)
    return one.replace("[engine]\n", f"[engine]\nmaster_port = {master_port}\n")


@dataclass
class VllmCpuServer:
    """The session's CPU vLLM: where it answers and the file that started it."""

    base_url: str
    cluster_file: Path
    state_dir: Path
    boot_seconds: float

    @property
    def model(self) -> str:
        return SERVED_NAME

    def sparkrig(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """A sparkrig command with the session's state folder (where `up` recorded it)."""
        return run_sparkrig(self.state_dir, *args, timeout=timeout)


def run_sparkrig(
    state: Path, *args: str, timeout: float = 300, extra_env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """A sparkrig command with its state folder at `state` (where `up` records and `down`
    reads), and `extra_env` beside this process's environment."""
    env = {**os.environ, STATE_ENV: str(state), **(extra_env or {})}
    return subprocess.run(
        [SPARKRIG, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env
    )


class SessionBoot:
    """`sparkrig up --apply` running in the background from collection on."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="sparkrig-vllm-cpu-"))
        self.state = self.folder / "state"
        self.port = free_port("127.0.0.1")
        self.cluster_file = self.folder / "vllm-cpu.toml"
        self.cluster_file.write_text(cluster_text(self.port))
        self.started = time.monotonic()
        self.log = (self.folder / "up.out").open("w")
        # niced, with every process it starts: its minutes of compiling yield the cores to the
        # tests that run meanwhile, some of which time their own requests to 0.1 s
        self.process = subprocess.Popen(
            ["nice", "-n", str(BOOT_NICENESS), SPARKRIG, "up", str(self.cluster_file), "--apply"],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, STATE_ENV: str(self.state)},
        )
        self.result: VllmCpuServer | str | None = None

    def wait(self) -> VllmCpuServer | str:
        """The server once ready, or why it is not (the end of `up`'s output)."""
        if self.result is None:
            try:
                code = self.process.wait(timeout=BOOT_LIMIT_S + 60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                code = -1
            self.log.close()
            output = (self.folder / "up.out").read_text(errors="replace")
            if code == 0:
                self.result = VllmCpuServer(
                    base_url=f"http://127.0.0.1:{self.port}",
                    cluster_file=self.cluster_file,
                    state_dir=self.state,
                    boot_seconds=round(time.monotonic() - self.started, 1),
                )
            else:
                self.result = f"`sparkrig up` exited {code}:\n{output[-3000:]}"
        return self.result

    def stop(self) -> None:
        """`sparkrig down --apply`, whatever `up` got to (it stops what it recorded)."""
        if self.process.poll() is None:
            self.process.terminate()  # `up` interrupted stops what it started
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
        down = run_sparkrig(self.state, "down", str(self.cluster_file), "--apply", timeout=300)
        if down.returncode == 0:
            shutil.rmtree(self.folder, ignore_errors=True)
