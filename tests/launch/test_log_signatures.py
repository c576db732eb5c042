"""Every catalogued log signature fires on its line and stays quiet on clean real logs.

Each example says where its line comes from: REAL (captured from a running system, quoted by a
field report or a public issue) or BUILT (made here in the exact format of the program that
prints it). The clean cases are whole real logs: vLLM 0.26.0's serve log and the embedded
llama-server's (tests/fixtures/*/README.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkrig.fabric.runner import CommandResult
from sparkrig.launch.forensics import kernel_lines_since, kernel_log_reading
from sparkrig.launch.log_signatures import KERNEL, SIGNATURES, scan_lines

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
VLLM_LOG = (FIXTURES / "vllm" / "serve.log").read_text().splitlines()
VLLM_SPEC_LOG = (FIXTURES / "vllm" / "live" / "ngram-serve.log").read_text().splitlines()
LLAMA_LOG = (FIXTURES / "llamacpp" / "serve.log").read_text().splitlines()

# signature -> (log kind, line, provenance)
EXAMPLES: dict[str, tuple[str, str, str]] = {
    "container-ulimit-refused": (
        "llamacpp",
        "Error: runc: runc create failed: unable to start container process: error during "
        "container init: error setting rlimits for ready process: error setting rlimit type 7: "
        "operation not permitted: OCI permission denied",
        "REAL: podman 4.3.1 with runc on the CI machine, default nofile over the hard limit",
    ),
    "container-image-missing": (
        "vllm",
        "Error: inspecting object: localhost/nope: image not known",
        "REAL: podman 4.3.1 on the CI machine, an image that is not there",
    ),
    "ib-qp-connect-timeout": (
        "vllm",
        "Call to ibv_modify_qp failed with 110 Connection timed out, on dev rocep1s0f1:1, "
        "local GID ::ffff:192.168.100.1, remote GID ::ffff:192.168.101.3",
        "REAL: NCCL's warning as a public mesh-plugin README quotes it (addresses its own)",
    ),
    "roce-collective-peer-silent": (
        "vllm",
        "RoCE collective on rank 0 saw nothing from rank 1, HCA 0, for 10.000 s",
        "REAL: the line the report behind docs/field-notes.md#collective-timeout-10s quotes",
    ),
    "cuda-launch-failed": (
        "vllm",
        "(Worker pid=213) ERROR 11-30 20:35:05 [multiproc_executor.py:912] RuntimeError: "
        "cuModuleLoadData failed: CUDA_ERROR_LAUNCH_FAILED",
        "BUILT: vLLM's worker-error line format, the driver's error name",
    ),
    "xid-43": (
        KERNEL,
        "[ 4711.250113] NVRM: Xid (PCI:000f:01:00): 43, pid=5306, name=python3, Ch 00000008",
        "BUILT: the NVIDIA driver's Xid kernel-log format",
    ),
    "unified-memory-exhausted": (
        KERNEL,
        "[  812.118730] NVRM: nvAssertOkFailedNoLog: Assertion failed: Out of memory "
        "[NV_ERR_NO_MEMORY] (0x00000051) returned from pRmApi->Alloc",
        "BUILT: the NVIDIA driver's assertion kernel-log format",
    ),
    "moe-backend-not-b12x": (
        "vllm",
        "(EngineCore pid=1077) INFO 07-29 10:02:11 [mxfp4.py:352] Using 'DEEPGEMM_MXFP4' Mxfp4 "
        "MoE backend.",
        "BUILT: vLLM's MoE-backend line as a public log of 0.19.1 quotes it, another backend",
    ),
    "rank-never-joined": (
        "vllm",
        "torch.distributed.DistStoreError: Timed out after 601 seconds waiting for clients. "
        "1/4 clients joined.",
        "REAL: vllm-project/vllm issue 17056",
    ),
    "worker-process-died": (
        "vllm",
        "(MainProcess pid=29200) ERROR 12-07 02:49:17 [multiproc_executor.py:315] Worker proc "
        "VllmWorker-1 died unexpectedly (exit code: None), shutting down executor.",
        "REAL: vLLM 0.32 CPU build, the headless node's log after its PP1 rank was killed "
        "(the pair journey, docs/launch.md)",
    ),
    "peer-rank-gone": (
        "vllm",
        "(Worker_PP0 pid=3138) ERROR 12-07 02:43:26 [multiproc_executor.py:1063] RuntimeError: "
        "[/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
        "closed by peer [10.254.39.11]:10392. This is typically caused by a remote worker "
        "crashing. Check the logs of the remote worker before reporting an error.",
        "REAL: vLLM 0.32 CPU build, the head's worker after the PP1 rank on the other "
        "namespace node was killed (the pair journey, docs/launch.md)",
    ),
    "ipc-removed-at-logout": (
        "vllm",
        "    self._semlock = _multiprocessing.SemLock._rebuild(*state)",
        "BUILT: CPython 3.12's traceback line in multiprocessing/synchronize.py __setstate__, "
        "where spark-arena/sparkrun issue 285 shows the worker failing",
    ),
    "ray-pack-placement": (
        "vllm",
        "specs=[{'GPU': 1.0, 'node:192.168.50.192': 0.001}, {'GPU': 1.0}] (PACK)",
        "REAL: eugr/spark-vllm-docker issue 227",
    ),
}


def test_every_signature_has_an_example() -> None:
    assert set(EXAMPLES) == set(SIGNATURES.names())


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_a_signature_fires_on_its_line(name: str) -> None:
    kind, line, _provenance = EXAMPLES[name]
    hits = scan_lines(["some earlier line", line], kind, "b/vllm")
    assert [hit.signature for hit in hits] == [name]
    hit = hits[0]
    assert hit.line_number == 2
    assert hit.count == 1
    assert hit.meaning
    assert hit.fix
    assert hit.sources
    assert hit.one_line().startswith(f"b/vllm: [{name}] ")


@pytest.mark.parametrize(
    ("kind", "lines"),
    [("vllm", VLLM_LOG), ("vllm", VLLM_SPEC_LOG), ("llamacpp", LLAMA_LOG), (None, VLLM_LOG)],
)
def test_real_clean_logs_match_nothing(kind: str | None, lines: list[str]) -> None:
    assert scan_lines(lines, kind, "a/engine") == []


def test_a_kernel_only_signature_is_not_looked_for_in_an_engine_log() -> None:
    _, line, _ = EXAMPLES["xid-43"]
    assert scan_lines([line], "vllm", "a/vllm") == []
    assert scan_lines([line], None, "a/vllm") == []


def test_the_absence_signature_needs_the_engine_to_report_its_backend() -> None:
    b12x = "(EngineCore pid=1) INFO 07-29 10:02:11 [mxfp4.py:352] Using 'B12X' Mxfp4 MoE backend."
    _, other, _ = EXAMPLES["moe-backend-not-b12x"]
    assert scan_lines(VLLM_LOG, "vllm", "a") == []  # no MoE backend reported: silence is no fault
    assert scan_lines([b12x], "vllm", "a") == []
    assert scan_lines([other, b12x], "vllm", "a") == []  # B12X was chosen after all
    assert [h.signature for h in scan_lines([other], "vllm", "a")] == ["moe-backend-not-b12x"]


def test_repeated_lines_are_counted_and_the_first_is_kept() -> None:
    _, line, _ = EXAMPLES["cuda-launch-failed"]
    hits = scan_lines(["x", line, "y", line + " again"], "vllm", "b/vllm")
    assert (hits[0].line_number, hits[0].count, hits[0].line) == (2, 2, line)


def test_a_refused_dmesg_is_said_not_taken_for_a_clean_kernel_log() -> None:
    refused = CommandResult(
        argv=["dmesg"],
        returncode=1,
        stdout="",
        stderr="dmesg: read kernel buffer failed: Operation not permitted\n",
    )
    lines, note = kernel_log_reading("b", refused)
    assert lines is None
    assert "kernel log of b not read" in note
    assert "Operation not permitted" in note
    read = CommandResult(argv=["dmesg"], returncode=0, stdout="[ 1.0] a\n[ 2.0] b\n", stderr="")
    assert kernel_log_reading("b", read) == (["[ 1.0] a", "[ 2.0] b"], "2 kernel log lines read")


def test_the_launch_doc_lists_every_signature() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "launch.md").read_text()
    assert [name for name in SIGNATURES.names() if f"| `{name}` |" not in doc] == []


def test_only_kernel_lines_since_the_launch_are_scanned() -> None:
    """An Xid of an earlier boot of the engine is not blamed on this one (BUILT: dmesg's
    `[seconds since boot]` stamps, and the `uptime` line the kernel-log script prints first)."""
    _, xid, _ = EXAMPLES["xid-43"]  # stamped 4711.25 s after boot
    stdout = f"uptime 4800.00\n{xid}\n[ 4790.000001] eth0: link up\n"
    result = CommandResult(argv=["sh"], returncode=0, stdout=stdout, stderr="")
    lines, _ = kernel_log_reading("a", result)
    assert lines is not None
    assert kernel_lines_since(stdout, lines, 120) == lines  # launched 120 s ago: the Xid counts
    assert kernel_lines_since(stdout, lines, 30) == ["[ 4790.000001] eth0: link up"]
    assert kernel_lines_since("no uptime line\n", lines, 30) == lines
