"""A command-line option bound to a pydantic model field, so a setting is declared once: its
default, its bounds (`ge`, `gt`, `le`, `lt`) and its help are the field's, and the option is
checked against those bounds while the command line is parsed (`ranged`), before any work.

    tokens: int = setting(BenchSettings, "decode_tokens", "--tokens")

is what aiperf writes as `Annotated[..., Field(...), CLIParameter(...)]`, in typer's terms. A
list field is written on the command line as text (`--concurrency 1,2,4`): `parse` turns it into
the value, and checks it, while the command line is parsed, so a bad list fails as early as an
out-of-range number.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import annotated_types
import typer

from sparkrig.cli.common import Range, ranged

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo

FIELD_DEFAULT: Any = object()
"""`setting(..., default=FIELD_DEFAULT)`: the option's default is the field's"""


def range_of(field: FieldInfo) -> Range | None:
    """The field's numeric bounds as a `Range`; None for a field without any."""
    low: float | None = None
    high: float | None = None
    low_open = high_open = False
    for bound in field.metadata:
        if isinstance(bound, annotated_types.Ge):
            low = _number(bound.ge)
        elif isinstance(bound, annotated_types.Gt):
            low, low_open = _number(bound.gt), True
        elif isinstance(bound, annotated_types.Le):
            high = _number(bound.le)
        elif isinstance(bound, annotated_types.Lt):
            high, high_open = _number(bound.lt), True
    if low is None and high is None:
        return None
    return Range(low=low, high=high, low_open=low_open, high_open=high_open)


def _number(bound: Any) -> float:
    if isinstance(bound, bool) or not isinstance(bound, int | float):
        raise TypeError(f"a field bound must be a number, not {bound!r}")
    return bound


def setting(
    model: type[BaseModel],
    name: str,
    *flags: str,
    default: Any = FIELD_DEFAULT,
    note: str | None = None,
    parse: Callable[[str], Any] | None = None,
    metavar: str | None = None,
) -> Any:
    """The typer option (used as a parameter's default) for `model.name`. `default` replaces
    the field's where the command fills it in later (e.g. by another option); `note` adds what
    only the command line needs to say, after the field's description. `parse` reads the
    option's text into the parameter's value while the command line is parsed (the field's
    list default is shown, and parsed, as its comma-separated text; the help names the value
    `metavar`, else the parser's own `metavar`); it raises a one-line `UsageError` on text it
    refuses."""
    field = model.model_fields[name]
    if not field.description:
        raise TypeError(f"{model.__name__}.{name} has no description to be the option's help")
    text = f"{field.description} ({note})" if note else field.description
    value = field.get_default(call_default_factory=True) if default is FIELD_DEFAULT else default
    if parse is not None:
        if isinstance(value, list | tuple):
            value = ",".join(map(str, value))
        shown = metavar or getattr(parse, "metavar", "TEXT")
        option = typer.Option(value, *flags, help=text, parser=parse, metavar=shown)
    elif (within := range_of(field)) is None:
        option = typer.Option(value, *flags, help=text)
    else:
        option = ranged(text, within, *flags, default=value)
    option.bound_field = (model, name)  # what `bound_values` reads back
    return option


def bound_values(
    command: Callable[..., Any], values: Mapping[str, Any], model: type[BaseModel]
) -> dict[str, Any]:
    """The values `command` was given (`ctx.params`) for its options bound to `model`'s fields,
    by field name: `BenchSettings(**bound_values(bench, ctx.params, BenchSettings))`, so a
    command never lists its bound settings a second time."""
    found: dict[str, Any] = {}
    for name, parameter in inspect.signature(command).parameters.items():
        bound = getattr(parameter.default, "bound_field", None)
        if bound is not None and bound[0] is model and name in values:
            found[bound[1]] = values[name]
    return found
