"""The log-signature catalogue: lines in an engine's log (or the kernel log) that each have one
known cause and one known fix, and the pure scan that finds them.

One registry entry per signature (`SIGNATURES`): a regex, the logs it applies to (an engine
kind, or `kernel`), what it means, the fix, and where the fact comes from (a field note, or the
launcher issue that reported it). An *absence* signature (`absent_unless`) fires when the log
reports the thing it is about (the engine named its MoE backend) but never says the expected
line; before the engine reports it, silence means nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from sparkrig.registry import Registry

KERNEL = "kernel"


@dataclass(frozen=True)
class LogSignature:
    name: str
    pattern: re.Pattern[str]
    logs: frozenset[str]  # engine kinds ("vllm", "llamacpp") and/or KERNEL
    meaning: str
    fix: str
    sources: tuple[str, ...]  # a field note (docs/field-notes.md), or the issue that reported it
    absent_unless: re.Pattern[str] | None = (
        None  # absence signature: fires on this, without pattern
    )
    # the engine cannot answer again after this line (a rank is gone): `status` says so at
    # once instead of waiting out a completion that hangs
    ends_serving: bool = False


SIGNATURES: Registry[LogSignature] = Registry("log signature")


def _add(signature: LogSignature) -> None:
    SIGNATURES.add(signature.name, signature)


_add(
    LogSignature(
        name="ib-qp-connect-timeout",
        pattern=re.compile(r"ibv_modify_qp\b.*(?:Connection timed out|INIT\s*->\s*RTR|\bRTR\b)"),
        logs=frozenset({"vllm"}),
        meaning="NCCL could not bring a queue pair to a peer to ready-to-receive: the rank "
        "reached its peer through a port not cabled to it, or an all-to-all opened a direct "
        "connection to a rank it shares no cable with (the far rank of a ring)",
        fix="set NCCL_IB_SUBNET_AWARE_ROUTING=1 with one subnet per cable (`sparkrig fabric "
        "apply` does both), and on a switchless ring run an engine whose all-to-all relays the "
        "far rank's block through a neighbour",
        sources=(
            "docs/field-notes.md#nccl-subnet-aware-routing",
            "docs/field-notes.md#ring-all-to-all-relay",
        ),
    )
)
_add(
    LogSignature(
        name="roce-collective-peer-silent",
        pattern=re.compile(r"RoCE collective on rank \d+ saw nothing from rank \d+"),
        logs=frozenset({"vllm"}),
        meaning="a one-shot collective gave up on a peer that sent nothing for its timeout; at "
        "start-up that peer was still JIT-compiling a kernel the waiting rank had cached",
        fix="equalise the JIT caches before the first boot (empty every node's together, or "
        "copy one node's to the others) and keep the 10 s timeout; a longer timeout only "
        "hides a real stall",
        sources=(
            "docs/field-notes.md#jit-inside-profiling",
            "docs/field-notes.md#collective-timeout-10s",
            "docs/field-notes.md#uneven-jit-caches",
        ),
    )
)
_add(
    LogSignature(
        name="cuda-launch-failed",
        pattern=re.compile(r"CUDA_ERROR_LAUNCH_FAILED"),
        logs=frozenset({"vllm"}),
        meaning="the GPU had been stopped (a collective gave up on a peer; the kernel log holds "
        "an Xid 43) and the next CUDA call failed",
        fix="look for a silent peer on the other ranks (`sparkrig logs CLUSTER --scan`) and "
        "equalise the JIT caches before the next boot",
        sources=("docs/field-notes.md#jit-inside-profiling",),
    )
)
_add(
    LogSignature(
        name="xid-43",
        pattern=re.compile(r"NVRM: Xid \([^)]*\): 43\b"),
        logs=frozenset({KERNEL}),
        meaning="the driver stopped a GPU channel (Xid 43): on these clusters, a collective "
        "that waited out its timeout on a peer still compiling",
        fix="equalise the JIT caches on every node before the next boot",
        sources=("docs/field-notes.md#jit-inside-profiling",),
    )
)
_add(
    LogSignature(
        name="unified-memory-exhausted",
        pattern=re.compile(r"NV_ERR_NO_MEMORY"),
        logs=frozenset({"vllm", "llamacpp", KERNEL}),
        meaning="the driver could not allocate: on unified memory the page cache and the GPU "
        "share one pool, and the engine's share left too little",
        fix="lower --gpu-memory-utilization (0.80 ran where 0.85 died) and drop the page "
        "cache before launching (`sync; echo 3 > /proc/sys/vm/drop_caches`)",
        sources=("docs/field-notes.md#unified-memory-080",),
    )
)
_add(
    LogSignature(
        name="moe-backend-not-b12x",
        pattern=re.compile(r"Using 'B12X[A-Z0-9_]*' Mxfp4 MoE backend"),
        absent_unless=re.compile(r"Using '[A-Z0-9_]+' Mxfp4 MoE backend"),
        logs=frozenset({"vllm"}),
        meaning="the engine named an Mxfp4 MoE backend other than B12X: on the DSpark image "
        "decode then runs at about half speed (about 29 tok/s instead of 50-60)",
        fix="set VLLM_USE_B12X_MOE=1 on every node (an image without B12X kernels cannot)",
        sources=("docs/field-notes.md#dspark-runtime-env",),
    )
)
_add(
    LogSignature(
        name="rank-never-joined",
        pattern=re.compile(r"DistStoreError|waiting for clients\. \d+/\d+ clients joined"),
        logs=frozenset({"vllm"}),
        meaning="the head's TCPStore waited for ranks that never connected: a worker did not "
        "start, died first, or cannot reach --master-addr:--master-port",
        fix="read the worker's own log (`sparkrig logs CLUSTER --scan`), check that the "
        "master port is reachable from every worker and that GLOO_SOCKET_IFNAME names the "
        "interface of the control address",
        sources=("https://github.com/eugr/spark-vllm-docker/issues/335",),
    )
)
_add(
    LogSignature(
        name="worker-process-died",
        pattern=re.compile(r"Worker proc \S+ died unexpectedly"),
        logs=frozenset({"vllm"}),
        meaning="one of this node's rank processes died under the engine (killed, taken by "
        "the kernel's OOM killer, or crashed without a Python error), and the engine shut "
        "down its executor; the other nodes' ranks lose their peer",
        fix="read the lines before it and this node's kernel log (`dmesg -T | grep -i -e oom "
        "-e killed`), then `sparkrig down CLUSTER --apply` and `up` again",
        sources=("docs/launch.md#the-journey-on-a-twin-of-the-cluster",),
        ends_serving=True,
    )
)
_add(
    LogSignature(
        name="peer-rank-gone",
        pattern=re.compile(
            r"gloo/transport/tcp/pair\.cc:\d+\] Connection closed by peer|"
            r"typically caused by a remote worker crashing"
        ),
        logs=frozenset({"vllm"}),
        meaning="a rank's collective connection to another rank was closed: that rank's "
        "process died, or its node or control link went away; the head may still answer "
        "/health while every request fails",
        fix="read the named peer's own log (`sparkrig logs CLUSTER NODE --scan`) for why it "
        "died, then `sparkrig down CLUSTER --apply` and `up` again: a vLLM whose rank died "
        "does not recover by itself",
        sources=("docs/launch.md#the-journey-on-a-twin-of-the-cluster",),
        ends_serving=True,
    )
)
_add(
    LogSignature(
        name="ipc-removed-at-logout",
        pattern=re.compile(r"SemLock\._rebuild|No such file or directory: '/psm_[0-9a-f]+'"),
        logs=frozenset({"vllm"}),
        meaning="systemd-logind (RemoveIPC=yes) deleted the serving user's semaphores and "
        "shared memory when the ssh session that started the worker ended; the worker fails "
        "while attaching to them and the head blocks forever",
        fix="`loginctl enable-linger USER` for the serving user on every node, or set "
        "RemoveIPC=no in /etc/systemd/logind.conf and restart systemd-logind",
        sources=(
            "https://github.com/eugr/spark-vllm-docker/issues/352",
            "https://github.com/spark-arena/sparkrun/issues/285",
        ),
    )
)
_add(
    LogSignature(
        name="ray-pack-placement",
        pattern=re.compile(r"specs=\[.*\] \(PACK\)"),
        logs=frozenset({"vllm"}),
        meaning="vLLM asked Ray for a PACK placement group: with one GPU per node it anchors the "
        "first GPU to the head's route address, which a multi-NIC host may not satisfy, and "
        "start-up waits on the placement group",
        fix="make vLLM's driver address Ray's: set VLLM_HOST_IP on every node to the address "
        "its `ray start --node-ip-address` gives (vLLM pins the first bundle to node:<get_ip()>; "
        "`sparkrig doctor` checks it as ray-node-address)",
        sources=("https://github.com/eugr/spark-vllm-docker/issues/227",),
    )
)

_add(
    LogSignature(
        name="container-ulimit-refused",
        pattern=re.compile(
            r"(?:setrlimit [`']?RLIMIT_\w+[`']?|error setting rlimit type \d+): "
            r"operation not permitted",
            re.IGNORECASE,
        ),
        logs=frozenset({"vllm", "llamacpp"}),
        meaning="the container runtime could not set a --ulimit: raising a limit above the "
        "host's hard limit needs CAP_SYS_RESOURCE, which a nested or locked-down host does not "
        "grant (podman's own default nofile and nproc can be refused too)",
        fix="set engine.container.ulimits to values at or below the node's `ulimit -H -a` "
        "(memlock, stack, nofile, nproc), or raise the node's hard limits where the host allows",
        sources=("seen with podman 4.3.1 on the test machine (crun and runc)",),
    )
)
_add(
    LogSignature(
        name="container-image-missing",
        pattern=re.compile(
            r"Unable to find image '[^']+' locally|image not known|manifest unknown|"
            r"pull access denied"
        ),
        logs=frozenset({"vllm", "llamacpp"}),
        meaning="the node has no copy of the image and could not pull it (no registry, or "
        "a tag that names nothing there)",
        fix="load the same build on every node (`docker save IMAGE | ssh NODE docker load`) "
        "and pin it as name@sha256:…; `up` compares its layers on every node before start",
        sources=("podman 4.3.1's `image inspect` of an absent image, on the test machine",),
    )
)


class SignatureHit(BaseModel):
    """One signature found in one log: the first line that shows it, and how many do."""

    model_config = ConfigDict(frozen=True)

    signature: str
    where: str = Field(description="the log: NODE/PROCESS, or NODE kernel")
    line_number: int = Field(description="1-based, in the lines scanned")
    line: str
    count: int
    meaning: str
    fix: str
    sources: list[str]
    ends_serving: bool = Field(
        default=False, description="the engine cannot answer again after this line"
    )

    def one_line(self) -> str:
        return f"{self.where}: [{self.signature}] {self.meaning} — {self.fix}"


def applies_to(signature: LogSignature, log_kind: str | None) -> bool:
    """None: a log of unknown kind gets every signature but the kernel-only ones."""
    if log_kind is None:
        return signature.logs != frozenset({KERNEL})
    return log_kind in signature.logs


def scan_lines(lines: Sequence[str], log_kind: str | None, where: str) -> list[SignatureHit]:
    """Every catalogued signature in `lines`, in catalogue order (pure)."""
    hits = []
    for signature in SIGNATURES.entries():
        if not applies_to(signature, log_kind):
            continue
        trigger = signature.absent_unless or signature.pattern
        found = [(n, line) for n, line in enumerate(lines, 1) if trigger.search(line)]
        if not found:
            continue
        if signature.absent_unless is not None and any(signature.pattern.search(x) for x in lines):
            continue  # the expected line is there
        first_number, first_line = found[0]
        hits.append(
            SignatureHit(
                signature=signature.name,
                where=where,
                line_number=first_number,
                line=first_line.strip()[:400],
                count=len(found),
                meaning=signature.meaning,
                fix=signature.fix,
                sources=list(signature.sources),
                ends_serving=signature.ends_serving,
            )
        )
    return hits
