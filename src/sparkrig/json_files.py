"""Every file sparkrig reads or writes as a whole goes through here.

Writes are atomic (beside the target, then renamed), so an interrupted write never leaves half a
file. Reads fail in one line that names the file, what is wrong with it and what to do, for
every way a file can be wrong: missing, a directory, a pipe or device (never opened: a pipe
with no writer would wait forever, /dev/zero never ends), larger than sparkrig reads whole,
unreadable, not UTF-8, not JSON, JSON of another kind, a damaged field (a timestamp without its
time zone among them), a number that is NaN, infinite or past ±2**1023
(`outside_numbers.check_every_number`, before the model reads it). Advice never tells the user
to delete a file that is a valid file of another kind.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from sparkrig.errors import SparkrigError, UsageError, excerpt, validation_problem
from sparkrig.outside_numbers import OutsideNumberError, check_every_number

Model = TypeVar("Model", bound=BaseModel)

_KIND_NAMES = {
    "sparkrig-bench": "a sparkrig bench receipt",
    "sparkrig-check": "a sparkrig check receipt",
    "sparkrig-check-baseline": "a sparkrig check baseline",
    "sparkrig-soak": "a sparkrig soak receipt",
    "sparkrig-smoke": "a sparkrig smoke receipt",
    "sparkrig-fabric-test": "a sparkrig fabric-test receipt",
}


def _then(fix: str) -> str:
    """A message's advice after its dash; none (and no dash) for a caller that gives none."""
    return f" — {fix}" if fix else ""


def write_atomically(model: BaseModel, path: Path) -> Path:
    """Write beside the target, then rename over it: a reader sees the old or the new file."""
    return write_text_atomically(model.model_dump_json(indent=2), path)


def write_text_atomically(text: str, path: Path) -> Path:
    """`write_atomically` for text that is not one model (a JSONL file of records), as UTF-8
    whatever the locale. A file it replaces keeps its permissions (a cluster file kept private
    stays private)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode: int | None = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        mode = None
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(text, encoding="utf-8")
    if mode is not None:
        scratch.chmod(mode)
    scratch.replace(path)
    return path


# The most sparkrig reads of one file whole: receipts, cluster files and traces are far
# smaller, and a file past it is a mistake (a model shard passed as a cluster file).
WHOLE_FILE_LIMIT = 1 << 30

_NOT_REGULAR = (
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def read_bytes_file(
    path: Path, *, what: str, fix: str, error: type[SparkrigError] = UsageError, limit: int = -1
) -> bytes:
    """The bytes of `path` (at most `limit`), or one line naming the file and the fix. Only a
    regular file is opened; read whole, it may hold at most WHOLE_FILE_LIMIT bytes."""
    try:
        mode = path.stat().st_mode
        kind = next((name for test, name in _NOT_REGULAR if test(mode)), None)
        if kind is not None:
            raise error(f"{what} {path} is {kind}, not a regular file{_then(fix)}")
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if limit < 0 and size > WHOLE_FILE_LIMIT:
                raise error(
                    f"{what} {path} holds {size / (1 << 30):.1f} GiB, more than the "
                    f"{WHOLE_FILE_LIMIT >> 30} GiB sparkrig reads of one file{_then(fix)}"
                )
            return handle.read(limit)
    except FileNotFoundError as exc:
        raise error(f"{what} {path} does not exist{_then(fix)}") from exc
    except IsADirectoryError as exc:
        raise error(f"{what} {path} is a directory, not a file{_then(fix)}") from exc
    except PermissionError as exc:
        raise error(
            f"cannot read {what} {path}: permission denied — run as the user who owns it, or "
            "give read permission (chmod u+r)"
        ) from exc
    except OSError as exc:
        raise error(f"cannot read {what} {path}: {exc.strerror or exc}{_then(fix)}") from exc


def read_text_file(
    path: Path,
    *,
    what: str,
    fix: str,
    error: type[SparkrigError] = UsageError,
    encoding: str = "utf-8",
) -> str:
    """The text of `path`: `read_bytes_file`'s errors, and bytes that are not `encoding`."""
    raw = read_bytes_file(path, what=what, fix=fix, error=error)
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise error(
            f"{what} {path} is not {encoding.upper()} text (byte {raw[exc.start]:#04x} at offset "
            f"{exc.start}){_then(fix)}"
        ) from exc


def read_json_file(
    path: Path, *, what: str, fix: str, error: type[SparkrigError] = UsageError
) -> Any:
    """The parsed JSON of `path`, or one line saying where it stops being JSON."""
    text = read_text_file(path, what=what, fix=fix, error=error)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        start = excerpt(text, 40) if text.strip() else "an empty file"
        raise error(
            f"{what} {path} is not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}; "
            f"starts {start!r}){_then(fix)}"
        ) from exc
    except RecursionError as exc:
        raise error(f"{what} {path} is JSON nested too deeply to read{_then(fix)}") from exc
    except ValueError as exc:  # an integer past Python's digit limit for reading one
        raise error(f"{what} {path} holds a number too long to read ({exc}){_then(fix)}") from exc


def kind_of(raw: Any) -> str:
    """What a parsed JSON value is, in words, for a message about a file of the wrong kind."""
    if isinstance(raw, dict):
        kind = raw.get("kind")
        if isinstance(kind, str):
            return _KIND_NAMES.get(kind, f'JSON of kind "{excerpt(kind, 40)}"')
        return "a JSON object of another kind"
    return {list: "a JSON list", str: "a JSON string", bool: "a JSON boolean"}.get(
        type(raw), "a JSON number" if isinstance(raw, (int, float)) else "JSON null"
    )


def read_model_file(
    path: Path,
    model: type[Model],
    *,
    what: str,
    fix: str,
    error: type[SparkrigError] = UsageError,
    kind: str | None = None,
    damaged_fix: str | None = None,
) -> Model:
    """`model` from the JSON file at `path`.

    `kind` is the value a file of this model carries in its `kind` field, when it has one: a
    file naming another kind is described as what it is. `damaged_fix` is the advice for a file of
    the right kind with a bad field (default: `fix`)."""
    raw = read_json_file(path, what=what, fix=fix, error=error)
    if not isinstance(raw, dict) or raw.get("kind") != kind:  # a kind where none belongs too
        raise error(f"{path} is {kind_of(raw)}, not {_a(what)}{_then(fix)}")
    try:
        check_every_number(raw, source=str(path))
    except OutsideNumberError as exc:
        raise error(f"{what} {number_problem(exc)} — {damaged_fix or fix}") from exc
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        if kind is None and not _shares_a_field(raw, model):
            raise error(f"{path} is {kind_of(raw)}, not {_a(what)}{_then(fix)}") from exc
        raise error(
            f"{what} {path} is damaged: {validation_problem(exc)} — {damaged_fix or fix}"
        ) from exc


def number_problem(exc: OutsideNumberError) -> str:
    """`PATH: FIELD is 'inf' (why), expected …` less the parser's own advice: the caller's fix
    is the one that fits a file sparkrig wrote."""
    seen = str(exc).split(" — ")[0]
    where, _, problem = seen.partition(": ")
    return f"{where} is damaged: {problem}"


def _a(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def _shares_a_field(raw: dict[str, Any], model: type[BaseModel]) -> bool:
    """Whether a file without a `kind` looks like this model at all (one field in common)."""
    return any(name in raw for name in model.model_fields)


def read_receipt(
    path: Path,
    model: type[Model],
    *,
    kind: str,
    schema_version: int,
    written_by: str,
    upgrades: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
    kindless: Callable[[dict[str, Any]], bool] | None = None,
) -> Model:
    """A receipt of `kind` at `schema_version`; `written_by` names the command that writes it
    (`sparkrig bench`), for the fix in each message. `upgrades` maps an older schema version this
    sparkrig still reads to the function that rewrites such a file's fields as today's;
    `kindless` says whether a file with no `kind` at all is one of this kind, written before the
    kind was named."""
    noun = kind.removeprefix("sparkrig-")
    fix = f"pass a receipt written by `{written_by}`"
    raw = read_json_file(path, what=f"{noun} receipt", fix=fix)
    if isinstance(raw, dict) and "kind" not in raw and kindless is not None and kindless(raw):
        raw = {**raw, "kind": kind}
    if not isinstance(raw, dict) or raw.get("kind") != kind:
        raise UsageError(f"{path} is {kind_of(raw)}, not a sparkrig {noun} receipt{_then(fix)}")
    try:
        check_every_number(raw, source=str(path))
    except OutsideNumberError as exc:
        raise UsageError(f"{noun} receipt {number_problem(exc)} — rerun `{written_by}`") from exc
    older = upgrades or {}
    version = raw.get("schema_version")
    upgrade = older.get(version) if type(version) is int and version != schema_version else None
    if version != schema_version and upgrade is None:
        readable = ", ".join(str(v) for v in sorted([*older, schema_version]))
        has = "no schema_version" if version is None else f"schema {json.dumps(version)}"
        raise UsageError(
            f"{path} has {noun} receipt {has}, this sparkrig reads {readable} — use "
            f"the sparkrig version that wrote it, or rerun `{written_by}`"
        )
    try:
        upgraded = raw if upgrade is None else upgrade(dict(raw))
        return model.model_validate(upgraded)
    except (ValidationError, ValueError, TypeError, KeyError) as exc:
        problem = validation_problem(exc) if isinstance(exc, ValidationError) else str(exc)
        raise UsageError(
            f"{path} is a damaged {noun} receipt ({problem}) — rerun `{written_by}`"
        ) from exc
