"""`doctor --live URL`: the running server against the cluster file. The pure part on a real vLLM
/metrics capture (tests/fixtures/vllm_metrics.txt); the whole command against the real
llama-server of the test session."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from sparkrig.cli import app
from sparkrig.config.cluster import Cluster
from sparkrig.doctor.live import live_checks
from sparkrig.launch.local import LocalInstance
from tests.doctor.fixtures import FIXTURES

VLLM_METRICS = (FIXTURES.parent / "vllm_metrics.txt").read_text()
SERVED = "deepseek-v4-flash-vision-exp-ablit-dual"  # the model name in that capture


def _cluster(kind: str, model: str, max_model_len: int | None = None) -> Cluster:
    profile = {"max_model_len": max_model_len} if max_model_len else {}
    return Cluster.model_validate(
        {
            "name": "live",
            "nodes": [{"name": "head"}],
            "engine": {"kind": kind},
            "model": {"path": f"/models/{model}"},
            "profile": profile,
        }
    )


def _models(max_model_len: int = 262144) -> dict[str, object]:
    return {"object": "list", "data": [{"id": SERVED, "max_model_len": max_model_len}]}


def test_the_running_server_matches_the_file() -> None:
    assert live_checks(_models(), VLLM_METRICS, _cluster("vllm", SERVED, 262144)) == []


def test_another_model_other_flags_or_engine_are_each_named() -> None:
    old = live_checks(_models(), VLLM_METRICS, _cluster("vllm", "GLM-5.3-Flash"))
    assert [(f.check, f.severity) for f in old] == [("live-model", "error")]
    assert "GLM-5.3-Flash" in old[0].seen
    flags = live_checks(_models(131072), VLLM_METRICS, _cluster("vllm", SERVED, 262144))
    assert [f.check for f in flags] == ["live-flags"]
    engine = live_checks(_models(), VLLM_METRICS, _cluster("llamacpp", SERVED))
    assert [f.check for f in engine] == ["live-metrics"]
    assert "vllm" in engine[0].seen


def test_cache_config_of_the_real_capture_against_the_profile() -> None:
    """The capture's vllm:cache_config_info says gpu_memory_utilization 0.835, block_size 4,
    cache_dtype nvfp4_ds_mla."""
    same = _cluster("vllm", SERVED)
    same = same.model_copy(
        update={
            "profile": same.profile.model_copy(
                update={
                    "gpu_memory_utilization": 0.835,
                    "block_size": 4,
                    "kv_cache_dtype": "nvfp4_ds_mla",
                }
            )
        }
    )
    assert live_checks(_models(), VLLM_METRICS, same) == []
    other = same.model_copy(
        update={
            "profile": same.profile.model_copy(
                update={"gpu_memory_utilization": 0.80, "kv_cache_dtype": "fp8"}
            )
        }
    )
    [finding] = live_checks(_models(), VLLM_METRICS, other)
    assert finding.check == "live-flags"
    assert "gpu_memory_utilization 0.835 (the file: 0.8)" in finding.seen
    assert "cache_dtype nvfp4_ds_mla (the file: fp8)" in finding.seen


def test_metrics_missing_or_not_prometheus_is_a_warning() -> None:
    gone = live_checks(_models(), None, None)
    page = live_checks(_models(), "<html>502 Bad Gateway</html>", None)
    assert [(f.check, f.severity) for f in gone + page] == [("live-metrics", "warning")] * 2


def test_live_against_the_real_llama_server(llama_server: LocalInstance, tmp_path: Path) -> None:
    vm = str(FIXTURES / "vm")
    result = CliRunner().invoke(
        app, ["doctor", "--load", vm, "--live", llama_server.base_url, "--json"]
    )
    report = json.loads(result.stdout)
    assert [f for f in report["findings"] if f["node"] == "live"] == []
    cluster = tmp_path / "cluster.toml"
    cluster.write_text(
        'name = "one"\n[[nodes]]\nname = "vm"\n[engine]\nkind = "llamacpp"\n'
        '[model]\npath = "/models/other-model.gguf"\n'
    )
    result = CliRunner().invoke(
        app, ["doctor", str(cluster), "--load", vm, "--live", llama_server.base_url, "--json"]
    )
    live = [f for f in json.loads(result.stdout)["findings"] if f["node"] == "live"]
    assert result.exit_code == 1
    assert [(f["check"], f["severity"]) for f in live] == [("live-model", "error")]
    assert "other-model.gguf" in live[0]["seen"]
    down = CliRunner().invoke(
        app, ["doctor", "--load", vm, "--live", "http://127.0.0.1:9", "--json"]
    )
    assert [f["check"] for f in json.loads(down.stdout)["findings"]][-1] == "live-reachable"
    assert down.exit_code == 1
