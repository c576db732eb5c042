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


def _cache(folder: Path, files: dict[str, int]) -> str:
    for name, size in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"k" * size)
    folder.mkdir(parents=True, exist_ok=True)
    return str(folder)


def _surveyed(folders: dict[str, str]) -> dict[str, dict[str, CacheSummary]]:
    """Each node's TRITON_CACHE_DIR as the survey reads it on the node (here: this machine)."""
    return {
        node: parse_survey(LocalExecutor().run(survey_script({"TRITON_CACHE_DIR": path})).stdout)
        for node, path in folders.items()
    }


def test_same_count_other_files_or_far_fewer_bytes_is_behind(tmp_path: Path) -> None:
    """Real folders: a and b hold the same three kernels; c the same count but another kernel;
    d the same names written part way (1 byte each); e an empty folder beside f's absent one."""
    kernels = {"sub/k1.so": 4000, "sub/k2.so": 3000, "k1.json": 200}
    folders = {
        "a": _cache(tmp_path / "a", kernels),
        "b": _cache(tmp_path / "b", kernels),
        "c": _cache(tmp_path / "c", {"sub/k1.so": 4000, "sub/k9.so": 3000, "k1.json": 200}),
        "d": _cache(tmp_path / "d", dict.fromkeys(kernels, 1)),
    }
    warnings = parity_warnings(_surveyed(folders))
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith(
        "JIT cache of node c is behind: TRITON_CACHE_DIR holds other files than a (the same 3 "
        "files by count"
    )
    assert warnings[1].startswith(
        "JIT cache of node d is behind: TRITON_CACHE_DIR 3 bytes against 7,200 on a for the "
        "same 3 files"
    )
    assert parity_warnings(_surveyed({n: folders[n] for n in ("a", "b")})) == []
    empty = {"e": _cache(tmp_path / "e", {}), "f": str(tmp_path / "f")}
    assert parity_warnings(_surveyed(empty)) == []  # nothing compiled anywhere yet
