"""benchmarks/vllm_gpu at a tiny size: pieces cut evenly and rejoined byte for byte, stage.sh
refusing a changed, stray or foreign piece, and the requirement check on real METADATA lines."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

VLLM_GPU = Path(__file__).parents[2] / "benchmarks" / "vllm_gpu"
sys.path.insert(0, str(VLLM_GPU))
stage_manifest = importlib.import_module("stage_manifest")
wheel_lock = importlib.import_module("wheel_lock")
prepare = importlib.import_module("prepare")

KIB = 1024


def _files(folder: Path, sizes: dict[str, int]) -> list[tuple[str, str, Path]]:
    files = []
    for index, (name, size) in enumerate(sizes.items()):
        path = folder / name
        path.write_bytes(bytes((index * 7 + n) % 251 for n in range(size)))
        files.append((name, "wheel", path))
    return files


def test_pieces_are_as_few_as_the_capacity_allows_and_filled_evenly(tmp_path: Path) -> None:
    files = _files(tmp_path, {"a.whl": 5, "b.whl": 17, "c.whl": 2})
    names, artifacts, sources = stage_manifest.cut_into_pieces(files, capacity=10, reserve=1)
    assert names == ["piece-1", "piece-2", "piece-3"]  # 24 bytes, 9 a piece at most: 3 of 8
    per_piece = {name: sum(p.size for p, _, _ in sources if p.piece == name) for name in names}
    assert per_piece == {"piece-1": 8, "piece-2": 8, "piece-3": 8}
    cut = next(art for art in artifacts if art.name == "b.whl")
    assert [p.file for p in cut.parts] == [
        "b.whl.part1-of-3",
        "b.whl.part2-of-3",
        "b.whl.part3-of-3",
    ]
    for art, (_, _, path) in zip(artifacts, files, strict=True):
        rejoined = b"".join(
            path.read_bytes()[offset : offset + part.size]
            for part, source, offset in sources
            if source == path
        )
        assert rejoined == path.read_bytes()
        assert art.sha256 == stage_manifest.sha256_of(path)


def _stage(piece: Path, stage: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(VLLM_GPU / "stage.sh"), str(piece)],
        capture_output=True,
        text=True,
        env={**os.environ, "VLLM_STAGE_DIR": str(stage)},
        timeout=60,
        check=False,
    )


@pytest.fixture
def pieces(tmp_path: Path) -> Path:
    source = tmp_path / "source"
    source.mkdir()
    files = _files(source, {"x.whl": 40 * KIB, "model.gguf": 100 * KIB})
    capacity = prepare.MANIFEST_RESERVE + 60 * KIB
    prepare.write_pieces(files, tmp_path / "out", capacity)
    return tmp_path / "out"


def test_new_pieces_replace_the_old_and_keep_sparkrigs_wheels(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "sparkrig-deps").mkdir(parents=True)
    (out / "sparkrig-deps" / "typer.whl").write_bytes(b"wheel")
    (out / "piece-9").mkdir()  # from an earlier cut into more pieces
    source = tmp_path / "source"
    source.mkdir()
    files = _files(source, {"x.whl": 40 * KIB})

    prepare.write_pieces(files, out, prepare.MANIFEST_RESERVE + 60 * KIB)

    assert sorted(path.name for path in out.iterdir()) == [
        "manifest.json",
        "piece-1",
        "sparkrig-deps",
    ]
    assert (out / "sparkrig-deps" / "typer.whl").read_bytes() == b"wheel"


def test_pieces_are_sized_by_the_room_the_tree_leaves() -> None:
    """A 9 MiB tree left 51 MiB for a piece beside sparkrig's wheels; a small tree the cap."""
    assert prepare.piece_room_mib(9 * prepare.MIB) == 51
    assert prepare.piece_room_mib(0) == prepare.PIECE_MIB


@pytest.mark.parametrize("size", ["0", "-5", "70"])
def test_a_piece_size_out_of_range_is_refused_before_any_download(size: str) -> None:
    """0 once meant "the default" by accident; -5 blamed the tree; 70 could never travel."""
    ran = subprocess.run(
        [sys.executable, str(VLLM_GPU / "prepare.py"), "--piece-mib", size],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 2
    assert f"--piece-mib {size}: give more than 0 and at most 64" in ran.stderr
    assert "downloading" not in ran.stdout


def test_stage_copies_each_piece_and_says_what_is_left(pieces: Path, tmp_path: Path) -> None:
    stage = tmp_path / "stage"
    first = _stage(pieces / "piece-1", stage)
    assert first.returncode == 0, first.stderr
    assert "1 of 3 pieces; still to stage: piece-2, piece-3" in first.stdout
    for name in ("piece-2", "piece-3"):
        assert _stage(pieces / name, stage).returncode == 0
    again = _stage(pieces / "piece-3", stage)
    assert "3 of 3 pieces; all there" in again.stdout
    manifest = stage_manifest.Manifest.read(stage / "manifest.json")
    for name in manifest.piece_names:
        assert stage_manifest.piece_problems(manifest, name, stage / name) == []


def test_stage_refuses_a_changed_or_stray_file_and_a_foreign_run(
    pieces: Path, tmp_path: Path
) -> None:
    stage = tmp_path / "stage"
    part = next(p for p in (pieces / "piece-2").iterdir() if p.name != "manifest.json")
    original = part.read_bytes()
    part.write_bytes(b"!" + original[1:])
    changed = _stage(pieces / "piece-2", stage)
    assert changed.returncode == 1
    assert "does not match its sha256" in changed.stderr
    part.write_bytes(original)
    (pieces / "piece-2" / "notes.txt").write_text("left behind")
    stray = _stage(pieces / "piece-2", stage)
    assert "notes.txt is not in the manifest" in stray.stderr
    (pieces / "piece-2" / "notes.txt").unlink()
    assert _stage(pieces / "piece-2", stage).returncode == 0
    other = stage / "manifest.json"
    other.write_text(other.read_text().replace("prepare.py", "another prepare.py"))
    foreign = _stage(pieces / "piece-1", stage)
    assert foreign.returncode == 1
    assert "holds pieces of another prepare run" in foreign.stderr


def test_requirement_gaps_on_the_host_python_only() -> None:
    # Requires-Dist lines as in mistral-common 1.13.1, xgrammar 0.2.7 and vLLM 0.26.0's METADATA
    requires = {
        "mistral-common": ['numpy<2.4,>=1.25; python_version <= "3.12"', "pydantic>=2.7"],
        "xgrammar": ['sentencepiece<0.2.2; python_version < "3.10" and extra == "test"'],
        "vllm": ["numba==0.65.0", 'six>=1.16.0; python_version > "3.11"', "blake3"],
    }
    carried = {"pydantic": "2.14.4"}
    host = {"numpy": "2.5.2", "numba": "0.68.0", "six": "1.17.0"}
    gaps = wheel_lock.requirement_gaps(requires, carried, host)
    assert [(pkg, req.name, have) for pkg, req, have in gaps] == [
        ("mistral-common", "numpy", "2.5.2"),
        ("vllm", "numba", "0.68.0"),
        ("vllm", "blake3", None),
    ]


def test_the_think_group_serves_the_template_it_copies_with_a_parser_vllm_026_has() -> None:
    """stages.py's think group: the cluster file lints clean against vLLM 0.26's own parser
    data, renders --reasoning-parser deepseek_v4 (a parser 0.26 registers) and reads the
    template where the group's first stage copies it."""
    from sparkrig.config.loading import load_cluster
    from sparkrig.engines.vllm.knowledge import knowledge_for
    from sparkrig.launch.cluster_plan import plan_launch
    from sparkrig.lint import lint_cluster

    stages = importlib.import_module("stages")
    cluster = load_cluster(VLLM_GPU / "vllm-h200-think.toml")
    assert lint_cluster(cluster) == []
    plan = plan_launch(cluster, local_state_dir=Path("/state"), require_executors=False)
    (head,) = [p for p in plan.processes if p.role == "head"]
    parser = head.argv[head.argv.index("--reasoning-parser") + 1]
    assert parser in knowledge_for("0.26").reasoning_parsers
    assert head.argv[head.argv.index("--chat-template") + 1] == stages.THINK_PATH
    think = [name for name, _, _ in stages.groups(60)["think"]]
    assert think[0] == "copy-template"
    assert think[-1] == "down-think"


def test_the_think_template_opens_think_in_the_prompt_unless_thinking_is_off() -> None:
    """SmolLM2's own template (its GGUF's, with its default system message) plus the opened
    <think>; with thinking=false an empty think block, as DeepSeek's chat mode."""
    jinja2 = pytest.importorskip("jinja2")
    template = jinja2.Template((VLLM_GPU / "think-template.jinja").read_text())
    messages = [{"role": "user", "content": "What's 1 + 1?"}]
    on = template.render(messages=messages, add_generation_prompt=True)
    off = template.render(messages=messages, add_generation_prompt=True, thinking=False)
    system = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM"
    turn = "<|im_start|>user\nWhat's 1 + 1?<|im_end|>\n<|im_start|>assistant\n"
    assert on.startswith(system)
    assert on.endswith(turn + "<think>\n")
    assert off.endswith(turn + "<think>\n\n</think>\n\n")


def test_the_pair_group_renders_the_pair_recipes_flags_less_those_it_names() -> None:
    """vllm-h200-pair.toml keeps the pair recipe's serving flags (examples/pair-vllm.toml) but
    the ones its header names (a second GPU and node, DeepSeek's cache dtype, the DSpark
    runtime, a 1M context), and derives the same capture size from the same (6, k = 5)."""
    from sparkrig.config.loading import load_cluster
    from sparkrig.launch.cluster_plan import plan_launch
    from sparkrig.lint import lint_cluster

    def head_argv(path: Path) -> list[str]:
        plan = plan_launch(load_cluster(path), local_state_dir=Path("/s"), require_executors=False)
        return next(p.argv for p in plan.processes if p.role == "head")

    def flags(argv: list[str]) -> dict[str, str]:
        found = {}
        for index, arg in enumerate(argv):
            if arg.startswith("--"):
                value = argv[index + 1] if index + 1 < len(argv) else ""
                found[arg] = "" if value.startswith("--") else value
        return found

    stand_in = VLLM_GPU / "vllm-h200-pair.toml"
    assert lint_cluster(load_cluster(stand_in)) == []
    pair = flags(head_argv(VLLM_GPU.parents[1] / "examples" / "pair-vllm.toml"))
    ours = flags(head_argv(stand_in))
    named = {"--tensor-parallel-size", "--kv-cache-dtype", "--speculative-config"}
    named |= {"--max-model-len", "--distributed-executor-backend", "--nnodes", "--node-rank"}
    named |= {"--master-addr", "--master-port", "--served-model-name", "--host", "--port"}
    named |= {"--reasoning-parser"}
    kept = {flag: value for flag, value in pair.items() if flag not in named}
    assert kept.items() - {"--gpu-memory-utilization": "0.8"}.items() <= ours.items()
    assert ours["--max-cudagraph-capture-size"] == pair["--max-cudagraph-capture-size"] == "40"


def test_the_think_group_serves_the_model_whose_vocabulary_holds_the_think_tags() -> None:
    """On SmolLM2's own vocabulary vLLM 0.26.0 refused --reasoning-parser (no <think> token):
    the group makes think_model.py's copy before `up`, and the cluster file serves that copy
    with thinking on server-wide, as report 001 runs it."""
    from sparkrig.config.loading import load_cluster
    from sparkrig.launch.cluster_plan import plan_launch

    stages = importlib.import_module("stages")
    cluster = load_cluster(VLLM_GPU / "vllm-h200-think.toml")
    plan = plan_launch(cluster, local_state_dir=Path("/state"), require_executors=False)
    (head,) = [p for p in plan.processes if p.role == "head"]
    assert stages.THINK_MODEL_DIR in head.argv
    assert '{"thinking":true}' in head.argv
    think = {name: argv for name, argv, _ in stages.groups(60)["think"]}
    names = list(think)
    assert names.index("think-model") < names.index("up-think")
    assert think["think-model"][-1] == stages.THINK_MODEL_DIR


def test_think_model_renames_two_unused_special_tokens_to_ordinary_think_tags(
    tmp_path: Path,
) -> None:
    """The vocabulary, the added-token tables and the special-token list of a tokenizer shaped
    as transformers writes SmolLM2's: ids 15 and 16 become <think> and </think>, not special
    (the detokenizer keeps them in the reply's text), the weights linked, not copied."""
    import json

    think_model = importlib.import_module("think_model")
    model = tmp_path / "model"
    model.mkdir()
    vocab = {"<|im_end|>": 2, "<jupyter_script>": 15, "<empty_output>": 16, "!": 17}
    added = [{"id": i, "content": t, "special": True} for t, i in vocab.items() if i in (2, 15, 16)]
    tokenizer = {"added_tokens": added, "model": {"type": "BPE", "vocab": vocab, "merges": []}}
    (model / "tokenizer.json").write_text(json.dumps(tokenizer))
    config = {
        "added_tokens_decoder": {str(a["id"]): dict(a) for a in added},
        "additional_special_tokens": ["<|im_end|>", "<jupyter_script>", "<empty_output>"],
    }
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    (model / "model.safetensors").write_bytes(b"weights")
    out = tmp_path / "think"
    think_model.make(model, out)
    written = json.loads((out / "tokenizer.json").read_text())
    assert written["model"]["vocab"] == {"<|im_end|>": 2, "<think>": 15, "</think>": 16, "!": 17}
    assert [(a["content"], a["special"]) for a in written["added_tokens"]] == [
        ("<|im_end|>", True),
        ("<think>", False),
        ("</think>", False),
    ]
    table = json.loads((out / "tokenizer_config.json").read_text())
    assert table["added_tokens_decoder"]["16"]["content"] == "</think>"
    assert table["additional_special_tokens"] == ["<|im_end|>"]
    assert (out / "model.safetensors").is_symlink()
    assert not (tmp_path / "think.partial").exists()


def test_think_model_refuses_a_vocabulary_without_the_ids_it_renames(tmp_path: Path) -> None:
    import json

    think_model = importlib.import_module("think_model")
    tokenizer = {"added_tokens": [], "model": {"vocab": {"a": 0}}}
    with pytest.raises(SystemExit, match="no id 15"):
        think_model.rename_tokens(tokenizer, think_model.RENAMED)
    taken = {"model": {"vocab": {"<think>": 3, "x": 15, "y": 16}}}
    with pytest.raises(SystemExit, match="already holds <think> as id 3"):
        think_model.rename_tokens(json.loads(json.dumps(taken)), think_model.RENAMED)


def test_peer_passes_summary_gives_each_ratio_its_median_range_and_each_clients_spread() -> None:
    """Three alternating passes at one level: the summary keeps every pass's ratio, and a
    client's own spread across passes beside it, so a gap smaller than the noise reads so."""
    sys.path.insert(0, str(VLLM_GPU.parent))
    peer = importlib.import_module("vllm_peer")

    def row(ours: float, theirs: float) -> dict[str, object]:
        a = {"median_ttft_ms": ours, "median_tpot_ms": 2.0, "output_throughput": 100.0}
        b = {"median_ttft_ms": theirs, "median_tpot_ms": 2.0, "output_throughput": 100.0}
        return {
            "concurrency": 4,
            "sparkrig": a,
            "vllm": b,
            "ratio_sparkrig_over_vllm": peer.ratios(a, b),
        }

    (entry,) = peer.summary([row(10.0, 10.0), row(12.0, 10.0), row(11.0, 11.0)])
    assert entry["passes"] == 3
    assert entry["ttft"]["ratios"] == [1.0, 1.2, 1.0]
    assert entry["ttft"]["median"] == 1.0
    assert entry["ttft"]["range"] == [1.0, 1.2]
    assert entry["ttft"]["own_spread"] == {"sparkrig": 1.2, "vllm": 1.1}
    assert entry["tokens_per_cpu_s"]["median"] is None
    assert peer.ceiling(1000, 0.5, 2.0) == {
        "client_cpu_s": 0.5,
        "busy": 0.25,
        "tokens_per_cpu_s": 2000.0,
    }
