"""`doctor --live URL`: the running server against the cluster file. The pure part on a real vLLM
0.26.0 /metrics capture and the flags its serve log names (tests/fixtures/vllm/); the whole
command against the real llama-server of the test session."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sparkrig.cli import app
from sparkrig.config.cluster import Cluster
from sparkrig.doctor.live import live_checks
from sparkrig.launch.local import LocalInstance
from tests.doctor.fixtures import FIXTURES
from tests.vllm_live import capture

VLLM_CAPTURES = FIXTURES.parent / "vllm"
VLLM_METRICS = (VLLM_CAPTURES / "metrics_after.txt").read_text()


def _serve_args() -> dict[str, Any]:
    """The flags the captured server was started with: its log's `non-default args: {...}`."""
    found = re.search(r"non-default args: (\{.*\})", (VLLM_CAPTURES / "serve.log").read_text())
    assert found is not None
    args: dict[str, Any] = ast.literal_eval(found[1])
    return args


SERVE_ARGS = _serve_args()
SERVED = SERVE_ARGS["served_model_name"][0]  # smollm2-135m-instruct, the name in the capture
MAX_MODEL_LEN = SERVE_ARGS["max_model_len"]


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


def _models(max_model_len: int = MAX_MODEL_LEN) -> dict[str, object]:
    return {"object": "list", "data": [{"id": SERVED, "max_model_len": max_model_len}]}


def test_the_running_server_matches_the_file() -> None:
    assert live_checks(_models(), VLLM_METRICS, _cluster("vllm", SERVED, MAX_MODEL_LEN)) == []


@pytest.mark.parametrize("label", ["after", "ngram-after"])
def test_the_live_captures_model_list_and_metrics_match_the_file(label: str) -> None:
    """/v1/models and /metrics as vLLM 0.26.0 sent them live (tests/fixtures/vllm/live/)."""
    models = json.loads(capture(label, "models"))
    metrics = capture(label, "metrics").decode()
    assert live_checks(models, metrics, _cluster("vllm", SERVED, MAX_MODEL_LEN)) == []


def test_another_model_other_flags_or_engine_are_each_named() -> None:
    old = live_checks(_models(), VLLM_METRICS, _cluster("vllm", "GLM-5.3-Flash"))
    assert [(f.check, f.severity) for f in old] == [("live-model", "error")]
    assert "GLM-5.3-Flash" in old[0].seen
    flags = live_checks(_models(4096), VLLM_METRICS, _cluster("vllm", SERVED, MAX_MODEL_LEN))
    assert [f.check for f in flags] == ["live-flags"]
    engine = live_checks(_models(), VLLM_METRICS, _cluster("llamacpp", SERVED))
    assert [f.check for f in engine] == ["live-metrics"]
    assert "vllm" in engine[0].seen


def test_cache_config_of_the_real_capture_against_the_profile() -> None:
    """The capture's vllm:cache_config_info says gpu_memory_utilization 0.3 (the serve log's
    flag), block_size 16 and cache_dtype auto (vLLM's defaults)."""
    same = _cluster("vllm", SERVED)
    same = same.model_copy(
        update={
            "profile": same.profile.model_copy(
                update={
                    "gpu_memory_utilization": SERVE_ARGS["gpu_memory_utilization"],
                    "block_size": 16,
                    "kv_cache_dtype": "auto",
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
    assert "gpu_memory_utilization 0.3 (the file: 0.8)" in finding.seen
    assert "cache_dtype auto (the file: fp8)" in finding.seen


def test_a_non_default_block_size_and_kv_dtype_of_a_later_vllm_are_read() -> None:
    """A third party's capture of a later vLLM (tests/fixtures/vllm_metrics.txt), kept for what
    ours lack: block_size 4 and cache_dtype nvfp4_ds_mla, neither of them a default."""
    later = (FIXTURES.parent / "vllm_metrics.txt").read_text()
    served = "deepseek-v4-flash-vision-exp-ablit-dual"
    cluster = _cluster("vllm", served)
    cluster = cluster.model_copy(
        update={
            "profile": cluster.profile.model_copy(
                update={"block_size": 16, "kv_cache_dtype": "fp8", "gpu_memory_utilization": 0.835}
            )
        }
    )
    models = {"object": "list", "data": [{"id": served}]}
    [finding] = live_checks(models, later, cluster)
    # block_size there is the size vLLM resolved per KV-cache group (_block_size_resolved="True"),
    # not the flag: it is not compared, so the file's block size raises no alarm
    assert finding.seen == "vllm:cache_config_info: cache_dtype nvfp4_ds_mla (the file: fp8)"


def test_the_resolved_block_size_of_a_deepseek_server_is_no_false_alarm() -> None:
    """The DeepSeek-V4 capture reports block_size "4" for a server started with block 256 (the
    recipes' main store): with the capture's own dtype and utilisation nothing differs."""
    later = (FIXTURES.parent / "vllm_metrics.txt").read_text()
    served = "deepseek-v4-flash-vision-exp-ablit-dual"
    cluster = _cluster("vllm", served)
    update = {"block_size": 256, "kv_cache_dtype": "nvfp4_ds_mla", "gpu_memory_utilization": 0.835}
    cluster = cluster.model_copy(update={"profile": cluster.profile.model_copy(update=update)})
    assert live_checks({"object": "list", "data": [{"id": served}]}, later, cluster) == []


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
    reached = json.loads(down.stdout)["findings"][-1]
    assert reached["check"] == "live-reachable"
    assert "nothing is listening on 127.0.0.1:9 (connection refused)" in reached["seen"]
    assert "ClientConnectorError" not in reached["seen"]
    assert down.exit_code == 1
    table = CliRunner().invoke(app, ["doctor", "--load", vm, "--live", "http://127.0.0.1:9"])
    assert "live-reachable" in table.stdout  # counted as an error, and printed
    assert table.exit_code == 1
