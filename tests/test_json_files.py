"""The one writer and reader of whole files: what a replaced file keeps, and messages from a
caller that gives no advice."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparkrig.errors import UsageError
from sparkrig.json_files import read_bytes_file, read_json_file, write_text_atomically


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    """A cluster file kept private (0600, it may name hosts and keys) stays private after
    `fabric discover --write` or any other rewrite; a new file gets the usual mode."""
    path = tmp_path / "cluster.toml"
    path.write_text("old")
    path.chmod(0o600)
    write_text_atomically("new", path)
    assert path.read_text() == "new"
    assert path.stat().st_mode & 0o7777 == 0o600
    fresh = write_text_atomically("x", tmp_path / "fresh.json")
    assert fresh.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_text_is_written_as_utf8_whatever_the_locale(tmp_path: Path) -> None:
    """Under LANG=C a locale-encoded write of 'µ' or '—' raised UnicodeEncodeError on Python
    builds without UTF-8 mode; receipts carry model output in any script."""
    path = tmp_path / "r.jsonl"
    code = (
        "import sys; from pathlib import Path; "
        "from sparkrig.json_files import write_text_atomically; "
        "write_text_atomically('\\u00b5s \\u2014 \\u6771\\u4eac\\n', Path(sys.argv[1]))"
    )
    env = {**os.environ, "LANG": "C", "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""}
    subprocess.run([sys.executable, "-c", code, str(path)], env=env, check=True, timeout=60)
    assert path.read_bytes() == "µs — 東京\n".encode()


def test_no_advice_leaves_no_dangling_dash(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UsageError) as caught:
        read_bytes_file(tmp_path / "pipe", what="capture", fix="")
    assert str(caught.value) == f"capture {tmp_path / 'pipe'} is a named pipe, not a regular file"
    with pytest.raises(UsageError) as told:
        read_bytes_file(tmp_path / "none", what="capture", fix="pass another")
    assert str(told.value).endswith("does not exist — pass another")


def test_a_number_past_the_digit_limit_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """json.loads raises a bare ValueError (not JSONDecodeError) for an integer of more than
    sys.get_int_max_str_digits() digits: a config.json lint reads may hold one."""
    path = tmp_path / "config.json"
    path.write_text('{"vocab_size": ' + "1" * 5000 + "}")
    with pytest.raises(UsageError) as caught:
        read_json_file(path, what="model config", fix="")
    assert str(caught.value).startswith(f"model config {path} holds a number too long to read")
