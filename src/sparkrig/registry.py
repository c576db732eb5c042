"""One registration style for every extension point (engine adapters, bench suites, guards, lint
rules, doctor checks): a named, ordered table that a module adds to, by decorator or by call.

Order is registration order, and callers that run "all of them" (the guard battery, the suites)
rely on it. Asking for a name that is not there is bad input: one line naming what is known.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Generic, TypeVar

from sparkrig.errors import UsageError

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries by name, in the order they were added. `what` names an entry in messages
    ("guard", "suite", "engine")."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, T] = {}

    def add(self, name: str, entry: T) -> T:
        """Add `entry` under `name`; a second entry of one name is a programming error."""
        if name in self._entries:
            raise ValueError(f"{self.what} {name!r} is registered twice — rename one")
        self._entries[name] = entry
        return entry

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of `add` for entries that are the decorated function or class."""

        def decorate(entry: T) -> T:
            return self.add(name, entry)

        return decorate

    def get(self, name: str) -> T:
        """The entry, or a UsageError naming every known one."""
        if name not in self._entries:
            raise self._unknown([name])
        return self._entries[name]

    def check(self, names: Iterable[str]) -> list[str]:
        """`names` as a list when every one is registered; else one UsageError naming them all."""
        chosen = list(names)
        unknown = [name for name in chosen if name not in self._entries]
        if unknown:
            raise self._unknown(unknown)
        return chosen

    def names(self) -> list[str]:
        return list(self._entries)

    def entries(self) -> list[T]:
        return list(self._entries.values())

    def items(self) -> list[tuple[str, T]]:
        return list(self._entries.items())

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        """Names in registration order, as a dict iterates its keys."""
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def known(self) -> str:
        return ", ".join(self._entries) or "none registered"

    def _unknown(self, names: list[str]) -> UsageError:
        return UsageError(f"unknown {self.what} {', '.join(names)} — choose from {self.known()}")
