"""Prove that a llama-server binary runs here: start it on the bundled model, one real
completion, stop.

A build can finish and still be unusable on this machine: the CPU advertises an instruction the
VM refuses (AMX under some hypervisors), and the binary dies by SIGILL the moment the weights are
repacked. Only a build that answers a completion here is recorded as good.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from sparkrig import defaults
from sparkrig.engines.adapter import SelfTestOutcome
from sparkrig.engines.llamacpp.server import LlamaServerSpec, llama_server_argv
from sparkrig.local_process import free_port, log_tail
from sparkrig.process_exit import from_returncode

NO_REPACK_FLAG = "--no-repack"
_PROMPT = "Count from 1 to 5: 1, 2,"
_POLL_S = 0.2
_STOP_GRACE_S = 5.0
_LOG_LINES = 2  # the lines a failed self-test quotes


def _get_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as response:  # noqa: S310 - our loopback
            return int(response.status) == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _complete(base_url: str, timeout_s: float) -> str:
    """One real completion; its text, or raises OSError/ValueError naming what went wrong."""
    body = json.dumps({"prompt": _PROMPT, "n_predict": 6, "temperature": 0}).encode()
    request = urllib.request.Request(  # noqa: S310 - our loopback
        f"{base_url}/completion", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
        reply = json.loads(response.read().decode("utf-8", errors="replace"))
    content = reply.get("content") if isinstance(reply, dict) else None
    if not isinstance(content, str) or not content.strip():
        raise ValueError(f"the completion came back without text: {str(reply)[:120]}")
    return content


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the whole process group the self-test started, SIGKILL after a grace period."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=_STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    except ProcessLookupError:
        proc.wait()


def self_test(
    binary: Path,
    model: Path,
    log_path: Path,
    *,
    repack: bool,
    timeout_s: float = defaults.ENGINE_SELF_TEST_TIMEOUT_S,
) -> SelfTestOutcome:
    """Start `binary` on `model`, wait for /health, ask one completion, stop it."""
    spec = LlamaServerSpec(
        binary=binary,
        model=model,
        alias="self-test",
        port=free_port(defaults.LOCAL_HOST),
        parallel_slots=1,
        context_tokens=defaults.ENGINE_SELF_TEST_CONTEXT,
        extra_args=[] if repack else [NO_REPACK_FLAG],
    )
    base_url = f"http://{spec.host}:{spec.port}"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    deadline = started + timeout_s

    def outcome(passed: bool, detail: str, **extra: object) -> SelfTestOutcome:
        return SelfTestOutcome.model_validate(
            {
                "binary": str(binary),
                "repack": repack,
                "passed": passed,
                "seconds": round(time.monotonic() - started, 2),
                "detail": detail,
                "log_path": str(log_path),
                **extra,
            }
        )

    with log_path.open("wb") as log:
        try:
            proc = subprocess.Popen(
                llama_server_argv(spec),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            return outcome(False, f"could not start: {exc.strerror or exc}")
    try:
        while time.monotonic() < deadline:
            if (code := proc.poll()) is not None:
                ended = from_returncode(code)
                tail = log_tail(log_path, _LOG_LINES, missing="")
                return outcome(
                    False,
                    f"{ended.describe()}" + (f"; last log: {tail}" if tail else ""),
                    signal_name=ended.signal_name if ended.signal_number else None,
                    exit_code=ended.exit_code,
                )
            if _get_ok(f"{base_url}/health"):
                try:
                    text = _complete(base_url, max(1.0, deadline - time.monotonic()))
                except (OSError, ValueError) as exc:
                    if (code := proc.poll()) is not None:
                        continue  # it died answering: report how, on the next pass
                    return outcome(False, f"healthy, but the completion failed: {exc}")
                return outcome(True, f"answered {text.strip()[:40]!r}")
            time.sleep(_POLL_S)
        return outcome(
            False,
            f"did not answer a completion within {timeout_s:.0f} s (hung or too slow)",
            timed_out=True,
        )
    finally:
        _stop(proc)
