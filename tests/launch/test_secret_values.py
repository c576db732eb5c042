"""Secrets in a process's environment and argv: the process spec keeps the real values for the
process and writes them out hidden, in its shell line and in every dump (plan JSON, state)."""

from __future__ import annotations

from sparkrig.engines.launch_spec import ProcessSpec
from sparkrig.fabric.plan_model import EnvVar
from sparkrig.secret_names import HIDDEN, hide_secret_args, is_secret_name


def _spec() -> ProcessSpec:
    return ProcessSpec(
        node="spark1",
        role="head",
        name="vllm",
        argv=["vllm", "serve", "/m", "--api-key", "sk-one", "--hf-token=hf_two", "--port", "8"],
        env=[
            EnvVar(name="HF_TOKEN", value="hf_three", reason="[env] of the cluster file"),
            EnvVar(name="NCCL_IB_HCA", value="=rocep1s0f0", reason="fabric plan"),
        ],
        ready_when="health",
    )


def test_secret_names_are_told_from_their_neighbours() -> None:
    assert is_secret_name("VLLM_API_KEY")
    assert is_secret_name("HF_TOKEN")
    assert not is_secret_name("TOKENIZERS_PARALLELISM")
    assert not is_secret_name("max_tokens")


def test_the_shell_line_and_the_dump_hide_secrets_and_the_process_keeps_them() -> None:
    spec = _spec()
    line = spec.shell_line()
    for secret in ("sk-one", "hf_two", "hf_three"):
        assert secret not in line
        assert secret not in spec.model_dump_json()
    assert "HF_TOKEN='[hidden]'" in line
    assert "NCCL_IB_HCA==rocep1s0f0" in line
    assert "--api-key '[hidden]' '--hf-token=[hidden]' --port 8" in line
    assert spec.argv[4] == "sk-one"  # what the launcher runs
    assert {var.name: var.value for var in spec.env}["HF_TOKEN"] == "hf_three"


def test_hiding_leaves_a_flag_at_the_end_and_other_flags_alone() -> None:
    assert hide_secret_args(["--token"]) == ["--token"]
    assert hide_secret_args(["--tokenizer", "t", "--api-key", "k"]) == [
        "--tokenizer",
        "t",
        "--api-key",
        HIDDEN,
    ]
