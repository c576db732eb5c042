"""Read what every rank's log says: signatures, boot phases and the KV pool, for `up` (when it
names a dead or stalled node, and once ready), `status` and `logs --scan`.

The I/O shell: each rank's log end and each node's kernel log are read through the node's
executor, all at once; the reading itself is the pure functions of `log_signatures`,
`boot_phases` and `kv_pool`. A kernel log that cannot be read (`dmesg` refused to a user
without the right) is said, never taken for a clean one.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from pydantic import BaseModel, Field

from sparkrig import defaults
from sparkrig.errors import ExecutorError
from sparkrig.fabric.runner import CommandResult, ExecutorSpec
from sparkrig.launch.boot_phases import BootPhase, boot_phases, slowest_phase
from sparkrig.launch.executors import executor_for
from sparkrig.launch.kv_pool import kv_pool_from_log
from sparkrig.launch.log_signatures import KERNEL, SignatureHit, scan_lines
from sparkrig.launch.state import LaunchState, StartedRecord, save_state
from sparkrig.outside_numbers import float_or_none

# kernel lines this long before the first process started still count: sparkrig's clock and the
# node's may differ by a few seconds, and a driver fault seconds before the start is this boot's
_KERNEL_MARGIN_S = 60.0
_ENGINE_OF_PROCESS = {"vllm": "vllm", "ray": "vllm", "llama-server": "llamacpp", "rpc": "llamacpp"}


class RankForensics(BaseModel):
    key: str = Field(description="NODE/PROCESS")
    node: str
    log_path: str
    lines_read: int = 0
    read_error: str | None = None
    hits: list[SignatureHit] = Field(default_factory=list)
    phases: list[BootPhase] = Field(default_factory=list)
    kv_pool_tokens: int | None = None


class KernelForensics(BaseModel):
    node: str
    readable: bool
    note: str = Field(description="why it could not be read, or how many lines were")
    hits: list[SignatureHit] = Field(default_factory=list)


class ForensicsReport(BaseModel):
    cluster: str
    ranks: list[RankForensics]
    kernels: list[KernelForensics] = Field(default_factory=list)

    @property
    def hits(self) -> list[SignatureHit]:
        return [h for r in self.ranks for h in r.hits] + [h for k in self.kernels for h in k.hits]

    def boot(self) -> dict[str, list[BootPhase]]:
        return {rank.key: rank.phases for rank in self.ranks if rank.phases}


def engine_of(state: LaunchState, record: StartedRecord) -> str | None:
    if state.engine is not None:
        return state.engine
    return "llamacpp" if state.server is not None else _ENGINE_OF_PROCESS.get(record.process.name)


def kernel_log_reading(node: str, result: CommandResult) -> tuple[list[str] | None, str]:
    """The kernel log's lines from a `dmesg` run, or None and why it is not readable (pure)."""
    if not result.ok:
        why = result.error_line or f"exit status {result.returncode}"
        return None, (
            f"kernel log of {node} not read: dmesg said {why!r} — run sparkrig as a user "
            "allowed to read it (root, or kernel.dmesg_restrict=0) to include Xid lines"
        )
    lines = [line for line in result.stdout.splitlines() if not line.startswith("uptime ")]
    return lines, f"{len(lines)} kernel log lines read"


_KERNEL_STAMP = re.compile(r"^\[\s*(\d+\.\d+)\]")


def kernel_lines_since(stdout: str, lines: list[str], seconds: float) -> list[str]:
    """The stamped kernel lines of the last `seconds` (dmesg stamps seconds since boot; the
    script's `uptime` line says where boot is), so an Xid of an earlier boot of the engine is not
    blamed on this one. Without an uptime line: every line (pure)."""
    first = stdout.split("\n", 1)[0]
    uptime = float_or_none(first.split()[1], minimum=0) if first.startswith("uptime ") else None
    if uptime is None:
        return lines
    kept = []
    for line in lines:
        stamp = _KERNEL_STAMP.match(line)
        at = float_or_none(stamp.group(1), minimum=0) if stamp else None
        if at is not None and at >= uptime - seconds:
            kept.append(line)
    return kept


def _read_rank(state: LaunchState, record: StartedRecord, max_lines: int) -> RankForensics:
    rank = RankForensics(key=record.process.key, node=record.process.node, log_path=record.log_path)
    try:
        result = executor_for(record.executor).run(["tail", "-n", str(max_lines), record.log_path])
    except ExecutorError as exc:
        rank.read_error = str(exc)
        return rank
    if not result.ok:
        rank.read_error = f"cannot read {record.log_path}: {result.error_line}"
        return rank
    lines = result.stdout.splitlines()
    engine = engine_of(state, record)
    rank.lines_read = len(lines)
    rank.hits = scan_lines(lines, engine, record.process.key)
    rank.phases = boot_phases(lines, engine) if engine else []
    rank.kv_pool_tokens = kv_pool_from_log(lines, engine) if engine else None
    return rank


def kernel_log_script(max_lines: int) -> list[str]:
    """`uptime SECONDS` first, then the kernel log's end; dmesg alone first (POSIX sh has no
    pipefail), so a refusal keeps its own status."""
    return [
        "sh",
        "-c",
        'echo "uptime $(cut -d" " -f1 /proc/uptime)"; '
        'out=$(dmesg 2>&1) || { echo "$out" >&2; exit 1; }; '
        f'printf "%s\\n" "$out" | tail -n {max_lines:d}',
    ]


def _read_kernel(node: str, spec: ExecutorSpec, max_lines: int, since_s: float) -> KernelForensics:
    try:
        result = executor_for(spec).run(kernel_log_script(max_lines))
    except ExecutorError as exc:
        return KernelForensics(node=node, readable=False, note=f"kernel log of {node}: {exc}")
    lines, note = kernel_log_reading(node, result)
    if lines is None:
        return KernelForensics(node=node, readable=False, note=note)
    recent = kernel_lines_since(result.stdout, lines, since_s)
    note = f"{note}, {len(recent)} of them since the launch started"
    hits = scan_lines(recent, KERNEL, f"{node} kernel")
    return KernelForensics(node=node, readable=True, note=note, hits=hits)


async def read_forensics(
    state: LaunchState,
    *,
    kernel: bool = True,
    max_lines: int = defaults.FORENSICS_LOG_LINES,
    kernel_lines: int = defaults.FORENSICS_KERNEL_LINES,
) -> ForensicsReport:
    """Every started rank's log and (with `kernel`) every node's kernel log, read at once."""
    ranks = await asyncio.gather(
        *(asyncio.to_thread(_read_rank, state, record, max_lines) for record in state.started)
    )
    kernels: list[KernelForensics] = []
    if kernel:
        nodes = {r.process.node: r.executor for r in state.started}
        since = max((r.uptime_s() for r in state.started), default=0.0) + _KERNEL_MARGIN_S
        kernels = list(
            await asyncio.gather(
                *(
                    asyncio.to_thread(_read_kernel, node, spec, kernel_lines, since)
                    for node, spec in nodes.items()
                )
            )
        )
    return ForensicsReport(cluster=state.cluster, ranks=list(ranks), kernels=kernels)


def hits_sentence(report: ForensicsReport) -> str:
    """One line for an error message: each signature found, where, its meaning and fix."""
    found = report.hits
    if not found:
        return ""
    return "; log signatures: " + "; ".join(hit.one_line() for hit in found)


async def record_boot(state: LaunchState, say: Callable[[str], None]) -> None:
    """Once ready: every rank's boot phases and the head's KV pool into the launch state, and
    the slowest rank and phase said."""
    report = await read_forensics(state, kernel=False)
    state.boot_phases = report.boot()
    head = [
        r for r, rec in zip(report.ranks, state.started, strict=True) if rec.process.role == "head"
    ]
    pools = [r.kv_pool_tokens for r in head + report.ranks if r.kv_pool_tokens is not None]
    state.kv_pool_tokens = pools[0] if pools else None
    save_state(state)
    if (slowest := slowest_phase(state.boot_phases)) is not None:
        key, phase = slowest
        say(
            f"slowest boot phase: {key} {phase.name} took {phase.took_s:.1f} s "
            f"(ready {phase.at_s:.1f} s into its log)"
        )
    if state.kv_pool_tokens is not None:
        say(f"KV pool this boot: {state.kv_pool_tokens:,} tokens")
