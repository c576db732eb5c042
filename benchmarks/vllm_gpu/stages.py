"""Every sparkrig stage against the live vLLM, in groups that each fit one device call.

    python3 benchmarks/vllm_gpu/stages.py GROUP [--budget SECONDS] [--soak SECONDS] [--from STAGE]

GROUP: serve (up, fixtures, check ×3, bench, the peer at plain), matrix (guard × fault matrix
through the gateway, gateway serve with the openai client, soak, doctor --live, report), spec
(restart with ngram speculation, spec suite, spec counters side by side, the peer), down.
Across calls (a process started with its own session outlives the call while the machine stays
warm): live (starts group soak detached, then up, check ×3 and the fault matrix), soak (a second
vLLM on port 8001, the gateway in front of it, the openai client, a --soak SECONDS soak, down),
finish (waits for soak, bench, the peer, doctor --live, report, then the ngram restart and the
peer again), peers (up, the peer, the ngram restart, the peer again), think (vllm-h200-think.toml:
vLLM's --reasoning-parser on a template that opens <think>; the reasoning captures directly and
through `gateway serve`, stop_in_reasoning and the reply guards; run it on a machine with no
other server on port 8000), pair (vllm-h200-pair.toml: the pair recipe's flags that need no
DeepSeek weights, up, fixtures, check --quick, down; port 8000 too), needles (up, a baseline of
needle, kv_integrity and consistency, the same guards judged against it, down: the three-needle
cells and the long KV documents on vLLM), soakthink (group soak detached, then, once its vLLM is
up, the think group on port 8000 with its gateway on 9100, then the ngram server for the next
call), passes (waits for the soak, then the peer in alternating passes under ngram, then plain:
run it at once after soakthink, with `--soak 600` on both); soakpeers and joinpeers (the same
for a session with less device time: the peers run on port 8000 beside the soak instead of after
it, then the think group once the soak is down).
Run from the repository root after assemble.py. Each stage's output goes to
/tmp/vllm-results/GROUP/NAME.log and one line per stage to GROUP/summary.jsonl as it ends; a
stage that would start past the group's budget is recorded as skipped. At the end every group's
folder under /tmp/vllm-results (a detached group's too) is packed into $OUT/results-GROUP.tgz.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "benchmarks/vllm_gpu/vllm-h200.toml"
THINK_CLUSTER = "benchmarks/vllm_gpu/vllm-h200-think.toml"  # port 8000, after `down`
PAIR_CLUSTER = "benchmarks/vllm_gpu/vllm-h200-pair.toml"  # port 8000, after `down`
THINK_TEMPLATE = "benchmarks/vllm_gpu/think-template.jinja"
SOAK_CLUSTER = "benchmarks/vllm_gpu/vllm-h200-soak.toml"  # port 8001
URL = "http://127.0.0.1:8000"
SOAK_URL = "http://127.0.0.1:8001"
GATEWAY = "http://127.0.0.1:9000"
THINK_GATEWAY = "http://127.0.0.1:9100"  # the think group's, beside the soak's on 9000
MODEL = "smollm2-135m-instruct"
TMP = Path(tempfile.gettempdir())  # /tmp there: where assemble.py put vLLM and the model
MODEL_DIR = str(TMP / "vllm-model")
RESULTS = TMP / "vllm-results"
THINK_MODEL_DIR = str(TMP / "vllm-model-think")  # think_model.py's copy: <think> in the vocabulary
THINK_PATH = str(TMP / "think-template.jinja")  # where vllm-h200-think.toml's --chat-template reads
SITES = (str(TMP / "sparkrig-site"), str(TMP / "vllm-site"))


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{TMP / 'vllm-bin'}:{env.get('PATH', '')}"
    env["PYTHONPATH"] = ":".join((str(REPO / "src"), str(REPO), *SITES))
    env["PYTHONUNBUFFERED"] = "1"
    env["SPARKRIG_TEST_SERVER_URL"] = URL  # tests/conftest.py: the matrix runs against vLLM
    for name in ("NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"):
        env[name] = "0" if name == "NCCL_NVLS_ENABLE" else "1"
    return env


SR = [sys.executable, "-m", "sparkrig"]
PY = [sys.executable]


def groups(soak_s: int) -> dict[str, list[tuple[str, list[str], int]]]:
    """name, argv, timeout in seconds."""
    check = [*SR, "check", URL, "--full", "--force", "--out"]

    def capture(label: str) -> list[str]:
        return [*PY, "benchmarks/vllm_gpu/capture.py", URL, MODEL, "{dir}/fixtures", label]

    def peer(label: str, levels: str = "1,4,16,64", passes: int = 1) -> list[str]:
        return [
            *PY,
            "benchmarks/vllm_peer.py",
            URL,
            MODEL,
            MODEL_DIR,
            "{dir}/peer",
            "--label",
            label,
            "--concurrency",
            levels,
            "--passes",
            str(passes),
        ]

    def logs(name: str, cluster: str = CLUSTER) -> tuple[str, list[str], int]:
        return (name, [*SR, "logs", cluster, "gpu", "-n", "400"], 60)

    def bench(suites: str, out: str) -> list[str]:
        ladder = ["--concurrency", "1,4,16,64", "--rounds", "1", "--force", "--out", out]
        return [*SR, "bench", URL, "--suite", suites, *ladder]

    matrix = (
        "fault-matrix",
        [
            *PY,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-v",  # one line per row as it ends: a row cut off by the budget loses only itself
            "tests/guards/test_fault_matrix.py",
            "-k",
            "not acceptance",
            "-o",
            "addopts=",
        ],
        540,
    )
    baseline = (
        "baseline",
        [
            *SR,
            "check",
            URL,
            "--record-baseline",
            "--guard",
            "exact,needle,kv_integrity",
            "--force",
            "--out",
            "{dir}/check-baseline.json",
        ],
        300,
    )
    checked = [  # up, then the battery three times against the baseline it records
        ("up", [*SR, "up", CLUSTER, "--apply"], 420),
        ("status", [*SR, "status", CLUSTER], 60),
        ("capture-plain", capture("plain"), 120),
        baseline,
        ("check-1", [*check, "{dir}/check-1.json"], 300),
        ("check-2", [*check, "{dir}/check-2.json"], 300),
        ("check-3", [*check, "{dir}/check-3.json"], 300),
    ]
    think = [  # vLLM's --reasoning-parser on a template that opens <think> (issue 23)
        (
            "copy-template",
            [*PY, "-c", f"import shutil; shutil.copy({THINK_TEMPLATE!r}, {THINK_PATH!r})"],
            30,
        ),
        (
            "think-model",
            [*PY, "benchmarks/vllm_gpu/think_model.py", MODEL_DIR, THINK_MODEL_DIR],
            120,
        ),
        ("up-think", [*SR, "up", THINK_CLUSTER, "--apply"], 420),
        ("capture-think", capture("think"), 300),
        (
            "check-think",
            [
                *SR,
                "check",
                URL,
                "--guard",
                "stop_in_reasoning,structured,stream_parity,consistency",
                "--force",
                "--out",
                "{dir}/check-think.json",
            ],
            300,
        ),
        ("gateway-think", ["@gateway-capture", "think-gateway", THINK_CLUSTER], 300),
        logs("logs-think", THINK_CLUSTER),
        ("down-think", [*SR, "down", THINK_CLUSTER, "--apply"], 120),
    ]
    up_ngram = ("up-ngram", [*SR, "up", CLUSTER, "--profile", "ngram", "--apply"], 420)
    spec_restart = [
        ("down-plain", [*SR, "down", CLUSTER, "--apply"], 120),
        up_ngram,
        ("capture-spec", capture("ngram"), 120),
    ]
    return {
        "live": [
            ("soak-detached", ["@detach", "soak", "--soak", str(soak_s), "--budget", "1500"], 10),
            *checked,
            matrix,
        ],
        "soak": [
            ("up-soak", [*SR, "up", SOAK_CLUSTER, "--apply"], 420),
            ("gateway-openai", ["@gateway", f"{soak_s}", SOAK_URL], soak_s + 240),
            logs("logs-soak", SOAK_CLUSTER),
            ("down-soak", [*SR, "down", SOAK_CLUSTER, "--apply"], 120),
        ],
        "finish": [
            ("wait-soak", ["@wait", "soak", "down-soak"], 900),
            ("bench-plain", bench("decode,concurrency,prefill", "{dir}/bench-plain.json"), 420),
            ("peer-plain", peer("plain"), 420),
            ("doctor-live", [*SR, "doctor", CLUSTER, "--live", URL, "--node", "gpu"], 180),
            (
                "report",
                [
                    *SR,
                    "report",
                    "{dir}/bench-plain.json",
                    "{dir}/../live/check-1.json",
                    "{dir}/../soak/soak.json",
                    "--out",
                    "{dir}/report.html",
                ],
                120,
            ),
            ("metrics-after", capture("after"), 120),
            logs("logs"),
            *spec_restart,
            ("peer-spec", peer("ngram"), 420),
            ("metrics-spec-after", capture("ngram-after"), 120),
            logs("logs-spec"),
            ("down", [*SR, "down", CLUSTER, "--apply"], 120),
        ],
        "peers": [  # the peer alone, plain then ngram, for a call with little device time
            ("up", [*SR, "up", CLUSTER, "--apply"], 420),
            ("peer-plain", peer("plain"), 420),
            *spec_restart,
            ("peer-spec", peer("ngram"), 420),
            logs("logs-spec"),
            ("down", [*SR, "down", CLUSTER, "--apply"], 120),
        ],
        "serve": [
            *checked,
            ("bench-plain", bench("decode,concurrency,prefill", "{dir}/bench-plain.json"), 420),
            (
                "peer-plain",
                peer("plain"),
                420,
            ),
            (
                "metrics-after",
                capture("after"),
                120,
            ),
            logs("logs"),
        ],
        "matrix": [
            matrix,
            ("gateway-openai", ["@gateway", f"{soak_s}"], soak_s + 240),
            ("doctor-live", [*SR, "doctor", CLUSTER, "--live", URL, "--node", "gpu"], 180),
            (
                "report",
                [
                    *SR,
                    "report",
                    "{dir}/../serve/bench-plain.json",
                    "{dir}/../serve/check-1.json",
                    "{dir}/soak.json",
                    "--out",
                    "{dir}/report.html",
                ],
                120,
            ),
        ],
        "spec": [
            *spec_restart,
            (
                "spec-window",
                [*PY, "benchmarks/vllm_gpu/spec_window.py", URL, MODEL, "{dir}/spec-window.json"],
                300,
            ),
            ("bench-spec", bench("spec,decode,concurrency", "{dir}/bench-spec.json"), 480),
            (
                "peer-spec",
                peer("ngram"),
                420,
            ),
            (
                "metrics-spec-after",
                capture("ngram-after"),
                120,
            ),
            logs("logs-spec"),
        ],
        "think": think,
        "soakthink": [  # the 10-minute soak detached on port 8001, the think group meanwhile
            ("soak-detached", ["@detach", "soak", "--soak", str(soak_s), "--budget", "1500"], 10),
            ("wait-soak-up", ["@wait", "soak", "up-soak"], 420),  # one vLLM sizing memory at once
            *think,
            up_ngram,  # for passes: ready before the soak ends
        ],
        "passes": [  # after the soak: the peer in alternating passes, under ngram, then plain
            ("wait-soak", ["@wait", "soak", "down-soak"], 900),
            up_ngram,  # refused at once when soakthink's is up
            ("capture-spec", capture("ngram"), 120),
            ("peer-spec", peer("ngram", "1,64", 2), 420),
            logs("logs-spec"),
            ("down-ngram", [*SR, "down", CLUSTER, "--apply"], 120),
            ("up", [*SR, "up", CLUSTER, "--apply"], 420),
            ("peer-plain", peer("plain", "1,64", 2), 420),
            ("down", [*SR, "down", CLUSTER, "--apply"], 120),
        ],
        "soakpeers": [  # little device time: the peers on port 8000 while the soak runs on 8001
            ("soak-detached", ["@detach", "soak", "--soak", str(soak_s), "--budget", "1500"], 10),
            ("wait-soak-up", ["@wait", "soak", "up-soak"], 420),  # one vLLM sizing memory at once
            up_ngram,
            ("capture-spec", capture("ngram"), 120),
            ("peer-spec", peer("ngram", "1,64", 2), 420),
            logs("logs-spec"),
            ("down-ngram", [*SR, "down", CLUSTER, "--apply"], 120),
            ("up", [*SR, "up", CLUSTER, "--apply"], 420),
        ],
        "joinpeers": [  # at once after soakpeers: the plain peer, the soak's end, then think
            ("peer-plain", peer("plain", "1,64", 2), 420),
            ("down", [*SR, "down", CLUSTER, "--apply"], 120),
            ("wait-soak", ["@wait", "soak", "down-soak"], 900),
            *think,
        ],
        "pair": [  # the pair recipe's flags that need no DeepSeek weights (issue 22)
            ("up-pair", [*SR, "up", PAIR_CLUSTER, "--apply"], 420),
            ("capture-pair", capture("pair"), 120),
            (
                "check-pair",
                [*SR, "check", URL, "--quick", "--force", "--out", "{dir}/check-pair.json"],
                180,
            ),
            logs("logs-pair", PAIR_CLUSTER),
            ("down-pair", [*SR, "down", PAIR_CLUSTER, "--apply"], 120),
        ],
        "needles": [  # issue 27's long-prompt cells on vLLM: three needles, long KV documents
            ("up", [*SR, "up", CLUSTER, "--apply"], 420),
            (
                "needles-baseline",
                [
                    *SR,
                    "check",
                    URL,
                    "--record-baseline",
                    "--guard",
                    "needle,kv_integrity,consistency",
                    "--force",
                    "--out",
                    "{dir}/needles-baseline.json",
                ],
                300,
            ),
            (
                "needles-check",
                [
                    *SR,
                    "check",
                    URL,
                    "--guard",
                    "needle,kv_integrity,consistency",
                    "--force",
                    "--out",
                    "{dir}/needles-check.json",
                ],
                300,
            ),
            ("down", [*SR, "down", CLUSTER, "--apply"], 120),
        ],
        "down": [("down", [*SR, "down", CLUSTER, "--apply"], 120)],
    }


def wait_for(url: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2):  # noqa: S310
                return True
        except OSError:
            time.sleep(0.5)
    return False


def gateway_stage(  # type: ignore[no-untyped-def]
    folder: Path,
    soak_s: int,
    log,
    env: dict[str, str],
    target: str = URL,
    *,
    capture_label: str | None = None,
    cluster: str | None = None,
) -> int:
    """gateway serve in front of vLLM; the openai client through it; a soak through it. With
    `capture_label`: capture.py's asks of that label through it instead, on THINK_GATEWAY's
    port (the soak's gateway may be up beside it), reading the upstream's server defaults from
    `cluster`."""
    base = THINK_GATEWAY if capture_label else GATEWAY
    gateway = subprocess.Popen(
        [
            *SR,
            "gateway",
            "serve",
            target,
            "--port",
            base.rsplit(":", 1)[1],
            *(["--cluster", cluster] if cluster else []),
            "--workload-log",
            str(folder / "workload.jsonl"),
            "--guard-log",
            str(folder / "guard-log.jsonl"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        if not wait_for(base, 60):
            log.write(b"gateway did not answer /health in 60 s\n")
            return 1
        capture = [*PY, "benchmarks/vllm_gpu/capture.py", base, MODEL, str(folder / "fixtures")]
        steps = (
            [[*capture, capture_label]]
            if capture_label
            else [
                [
                    *PY,
                    "benchmarks/vllm_gpu/openai_client.py",
                    GATEWAY,
                    MODEL,
                    str(folder / "openai-client.json"),
                ],
                [
                    *SR,
                    "soak",
                    GATEWAY,
                    "--model",
                    MODEL,
                    "--concurrency",
                    "4",
                    "--duration",
                    str(soak_s),
                    "--window",
                    str(max(30, soak_s // 4)),
                    "--metrics-url",
                    f"{target}/metrics",
                    "--receipt",
                    str(folder / "soak.json"),
                ],
            ]
        )
        codes = []
        for argv in steps:
            log.write(f"$ {' '.join(argv)}\n".encode())
            log.flush()
            codes.append(
                subprocess.run(
                    argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    timeout=soak_s + 180,
                    check=False,
                ).returncode
            )
        return max(codes)
    finally:
        gateway.send_signal(signal.SIGTERM)
        try:
            gateway.wait(30)
        except subprocess.TimeoutExpired:
            gateway.kill()


def detach(argv: list[str], folder: Path, log, env: dict[str, str]) -> int:  # type: ignore[no-untyped-def]
    """Start another group in its own session, its output in its own folder: it outlives this
    call (the machine stays warm while calls follow back to back); @wait in a later call
    joins it."""
    group = argv[0]
    (RESULTS / group).mkdir(parents=True, exist_ok=True)
    child_env = {k: v for k, v in env.items() if k != "OUT"}  # this call's $OUT goes with it
    with (RESULTS / group / "detached.log").open("wb") as out:
        child = subprocess.Popen(
            [*PY, __file__, *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=child_env,
            cwd=REPO,
            start_new_session=True,
        )
    (RESULTS / group / "detached.pid").write_text(f"{child.pid}\n")
    log.write(f"group {group} detached as pid {child.pid}\n".encode())
    return 0


def wait_group(group: str, last_stage: str, seconds: float, log) -> int:  # type: ignore[no-untyped-def]
    """Until the detached group's summary records last_stage, its process ends, or seconds pass."""
    summary = RESULTS / group / "summary.jsonl"
    pid_file = RESULTS / group / "detached.pid"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done = summary.exists() and any(
            json.loads(line).get("stage") == last_stage for line in summary.read_text().splitlines()
        )
        if done:
            log.write(f"group {group} recorded {last_stage}\n".encode())
            return 0
        pid = int(pid_file.read_text()) if pid_file.exists() else 0
        if not pid or not Path(f"/proc/{pid}").exists():
            log.write(f"group {group} is not running and never recorded {last_stage}\n".encode())
            return 1
        time.sleep(2)
    log.write(f"group {group}: no {last_stage} within {seconds:.0f} s\n".encode())
    return 124


def main() -> int:
    group = sys.argv[1]
    budget = float(sys.argv[sys.argv.index("--budget") + 1]) if "--budget" in sys.argv else 560
    soak_s = int(sys.argv[sys.argv.index("--soak") + 1]) if "--soak" in sys.argv else 240
    start = sys.argv[sys.argv.index("--from") + 1] if "--from" in sys.argv else None
    began = time.monotonic()
    folder = RESULTS / group
    folder.mkdir(parents=True, exist_ok=True)
    env = environment()
    summary = folder / "summary.jsonl"
    stages = groups(soak_s)[group]
    names = [name for name, _, _ in stages]
    if start is not None:  # resume a group cut short by an earlier call's budget
        stages = stages[names.index(start) :]
    for name, argv, timeout in stages:
        left = budget - (time.monotonic() - began)
        record: dict[str, object] = {"stage": name}
        if left < 30:
            record |= {"skipped": f"{left:.0f} s of the budget left"}
        else:
            argv = [part.replace("{dir}", str(folder)) for part in argv]  # noqa: PLW2901
            started = time.monotonic()
            with (folder / f"{name}.log").open("wb") as log:
                log.write(f"$ {' '.join(argv)}\n".encode())
                log.flush()
                try:
                    if argv[0] == "@gateway":
                        target = argv[2] if len(argv) > 2 else URL
                        code = gateway_stage(folder, soak_s, log, env, target)
                    elif argv[0] == "@gateway-capture":
                        code = gateway_stage(
                            folder, soak_s, log, env, capture_label=argv[1], cluster=argv[2]
                        )
                    elif argv[0] == "@detach":
                        code = detach(argv[1:], folder, log, env)
                    elif argv[0] == "@wait":
                        code = wait_group(argv[1], argv[2], min(timeout, left), log)
                    else:
                        code = subprocess.run(
                            argv,
                            stdout=log,
                            stderr=subprocess.STDOUT,
                            env=env,
                            cwd=REPO,
                            timeout=min(timeout, left),
                            check=False,
                        ).returncode
                except subprocess.TimeoutExpired:
                    code = 124
            record |= {"rc": code, "seconds": round(time.monotonic() - started, 1)}
        with summary.open("a") as out:
            out.write(json.dumps(record) + "\n")
        print(json.dumps(record), flush=True)
    if out_dir := os.environ.get("OUT"):
        with tarfile.open(Path(out_dir) / f"results-{group}.tgz", "w:gz") as tar:
            for each in sorted(RESULTS.iterdir()):  # a detached group's folder comes back too
                tar.add(each, arcname=each.name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
