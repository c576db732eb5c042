"""Cache parity: the survey runs on a node through its executor (here real folders on this
machine) and a node with fewer files in a cache than another is named, with the fix."""

from __future__ import annotations

from pathlib import Path

from sparkrig.launch.cache_parity import (
    CacheSummary,
    empty_caches_script,
    parity_warnings,
    parse_survey,
    survey_script,
)
from sparkrig.launch.executors import LocalExecutor


def summary(files: int, digest: str = "d") -> CacheSummary:
    return CacheSummary(path="/c", files=files, bytes=files * 10, digest=digest)


def test_a_node_behind_is_named_and_equal_caches_pass() -> None:
    even = {"a": {"TRITON_CACHE_DIR": summary(5)}, "b": {"TRITON_CACHE_DIR": summary(5)}}
    assert parity_warnings(even) == []
    uneven = {
        "a": {"TRITON_CACHE_DIR": summary(5), "TILELANG_CACHE_DIR": summary(73)},
        "b": {"TRITON_CACHE_DIR": summary(5), "TILELANG_CACHE_DIR": summary(0)},
        "c": {"TRITON_CACHE_DIR": summary(2), "TILELANG_CACHE_DIR": summary(73)},
    }
    warnings = parity_warnings(uneven)
    assert len(warnings) == 2
    assert warnings[0].startswith(
        "JIT cache of node b is behind: TILELANG_CACHE_DIR 0 files against 73 on a"
    )
    assert "copy the fullest node's caches" in warnings[0]
    assert warnings[1].startswith("JIT cache of node c is behind: TRITON_CACHE_DIR 2 files")
    assert parity_warnings({"a": {"TRITON_CACHE_DIR": summary(9)}}) == []  # one node: no peer


def test_the_survey_reads_real_folders(tmp_path: Path) -> None:
    full = tmp_path / "full"
    (full / "sub").mkdir(parents=True)
    (full / "sub" / "k.so").write_bytes(b"x" * 100)
    (full / "k.json").write_bytes(b"{}")
    same = tmp_path / "same"
    (same / "sub").mkdir(parents=True)
    (same / "sub" / "k.so").write_bytes(b"y" * 7)
    (same / "k.json").write_bytes(b"[]")
    dirs = {"TRITON_CACHE_DIR": str(full), "TILELANG_CACHE_DIR": str(tmp_path / "not yet")}
    got = parse_survey(LocalExecutor().run(survey_script(dirs)).stdout)
    assert got["TRITON_CACHE_DIR"].files == 2
    assert got["TRITON_CACHE_DIR"].bytes == 102
    assert got["TILELANG_CACHE_DIR"] == CacheSummary(
        path=str(tmp_path / "not yet"), files=0, bytes=0, digest="-"
    )
    again = parse_survey(LocalExecutor().run(survey_script({"T": str(same)})).stdout)
    assert again["T"].digest == got["TRITON_CACHE_DIR"].digest  # same names, other contents


def test_cold_empties_real_folders_and_never_a_shallow_path(tmp_path: Path) -> None:
    cache = tmp_path / "jit"
    (cache / "triton" / "k").mkdir(parents=True)
    (cache / "triton" / "k" / "a.cubin").write_bytes(b"x")
    (cache / ".hidden").write_bytes(b"y")
    dirs = {"VLLM_CACHE_ROOT": str(cache), "TRITON_CACHE_DIR": str(cache / "triton")}
    said = LocalExecutor().run(empty_caches_script(dirs)).stdout.splitlines()
    assert said == [f"emptied {cache} (4 entries)", f"absent {cache / 'triton'}"]
    assert cache.is_dir()
    assert list(cache.iterdir()) == []
    for shallow in ("/", "/home", "relative/dir", "/var/../etc"):
        assert empty_caches_script({"X": shallow}) == ["sh", "-c", "true"]
