"""`sparkrig up` and `status` against an engine started with an API key: readiness sends the key
the variable `engine.api_key_env` names, and the key shows up nowhere sparkrig writes or prints.

The engine is tests/launch/fake_vllm (a `vllm` command line in front of the real llama-server
with the bundled model), which takes its key the way vLLM does (VLLM_API_KEY) and then answers
/health without it and 401s /v1 without `Authorization: Bearer KEY`. The local executor runs it,
so it sees sparkrig's environment, as a vLLM on the node sees the node's."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from sparkrig.engines.llamacpp.build import EngineInstall
from sparkrig.launch.local import free_port
from sparkrig.launch.state import load_state, state_path
from tests.launch.test_vllm_one_node import one_node_file, sparkrig

NAME = "vllm-keyed"
KEY = "sk-rig-7d1f0c2e-never-shown"
# the engine reads VLLM_API_KEY; sparkrig reads the variable the file names, so a sparkrig that
# read VLLM_API_KEY instead would still pass with both set, and is caught when only it is set
SPARKRIG_VAR = "RIG_ENGINE_KEY"


def _unauthorised_completion(port: int) -> int:
    body = json.dumps({"model": "smollm2", "messages": [{"role": "user", "content": "hi"}]})
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as refused:
        return refused.code


@pytest.mark.engine
def test_readiness_sends_the_key_api_key_env_names_and_never_shows_it(
    tmp_path: Path, engine: EngineInstall, bundled_model: Path, session_state_dir: Path
) -> None:
    port = free_port("127.0.0.1")
    cluster_file = tmp_path / "keyed.toml"
    one_node_file(cluster_file, port, name=NAME, engine_extra=f'api_key_env = "{SPARKRIG_VAR}"')
    both = {"VLLM_API_KEY": KEY, SPARKRIG_VAR: KEY}

    def cli(*args: str, env: dict[str, str]) -> tuple[int, str]:
        run = sparkrig(
            *args, engine=engine, bundled_model=bundled_model, extra_env=env, cwd=tmp_path
        )
        said.append(run.stdout + run.stderr)
        return run.returncode, run.stdout

    said: list[str] = []
    state_text = ""
    try:
        code, out = cli("up", str(cluster_file), "--apply", env=both)
        assert code == 0, said[-1]
        assert "ready" in out
        state = load_state(NAME)
        assert state is not None
        state_text = state_path(state).read_text()
        assert _unauthorised_completion(port) == 401  # the engine really wants the key
        code, out = cli("status", str(cluster_file), env=both)
        assert code == 0, said[-1]  # status exits 1 unless the completion, with the key, came
        # the engine's variable alone is not the one the file names: no key, no readiness
        code, out = cli("status", str(cluster_file), "--json", env={"VLLM_API_KEY": KEY})
        assert code == 1, said[-1]
        assert json.loads(out)["ready"] is False
    finally:
        cli("down", str(cluster_file), "--apply", env=both)
    assert load_state(NAME) is None
    assert state_text
    assert KEY not in state_text
    for output in said:
        assert KEY not in output
    # every file sparkrig wrote: launch states, the engine logs it keeps, anything in the cwd
    written = [p for folder in (session_state_dir, tmp_path) for p in folder.rglob("*")]
    files = [p for p in written if p.is_file()]
    assert any(p.name.endswith(".log") for p in files)
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.engine
def test_a_key_in_the_files_env_table_reaches_the_engine_and_nothing_sparkrig_shows(
    tmp_path: Path, engine: EngineInstall, bundled_model: Path, session_state_dir: Path
) -> None:
    """The common shape: VLLM_API_KEY set in the cluster file's [env]. The engine gets the real
    value (readiness, which sends the key, passes); the plan, its JSON and the launch state
    show it hidden."""
    port = free_port("127.0.0.1")
    cluster_file = tmp_path / "keyed.toml"
    one_node_file(cluster_file, port, name=NAME, engine_extra=f'api_key_env = "{SPARKRIG_VAR}"')
    cluster_file.write_text(cluster_file.read_text() + f'[env]\nVLLM_API_KEY = "{KEY}"\n')
    said: list[str] = []

    def cli(*args: str) -> tuple[int, str]:
        run = sparkrig(
            *args,
            engine=engine,
            bundled_model=bundled_model,
            extra_env={SPARKRIG_VAR: KEY},
            cwd=tmp_path,
        )
        said.append(run.stdout + run.stderr)
        return run.returncode, run.stdout

    try:
        code, out = cli("up", str(cluster_file))
        assert code == 0, said[-1]
        assert "VLLM_API_KEY='[hidden]'" in out
        code, out = cli("up", str(cluster_file), "--json")
        assert code == 0, said[-1]
        env = json.loads(out)["processes"][0]["env"]
        assert {"name": "VLLM_API_KEY", "value": "[hidden]"}.items() <= next(
            var for var in env if var["name"] == "VLLM_API_KEY"
        ).items()
        code, out = cli("up", str(cluster_file), "--apply")
        assert code == 0, said[-1]  # the engine had the real key: readiness sent it and passed
        state = load_state(NAME)
        assert state is not None
        assert KEY not in state_path(state).read_text()
        assert _unauthorised_completion(port) == 401
    finally:
        cli("down", str(cluster_file), "--apply")
    assert load_state(NAME) is None
    for output in said:
        assert KEY not in output
    written = [p for folder in (session_state_dir, tmp_path) for p in folder.rglob("*")]
    for path in (p for p in written if p.is_file() and p != cluster_file):
        assert KEY.encode() not in path.read_bytes(), path
