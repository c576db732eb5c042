"""The bundled items of the accuracy-under-load guard: made by the project, each with an exact,
checkable answer — arithmetic with known results, a fact looked up in a given passage, a reply
in a stated format.

They are generated, not written: each family turns an item number into operands, passages and
answers by fixed modular formulas (no random numbers, so every build and every run asks the same
items in the same order). How many there are is a matter of power: an all-loss drop leaves the
exact paired interval only once 6 items are lost, whatever the item count (docs/guards.md,
"Accuracy under load"), so an 11-point drop needs 6 / 0.11 = 55 items or more; 72 leave room
for two items that a clean engine flips under load in the other direction.

The guard compares the server with itself, alone against loaded, so an item the bundled model
gets wrong is just one that cannot be lost. Every family's right reply fits in
CHECK_LOAD_REPLY_TOKENS and carries digits, which is where the gateway's wrong-under-load fault
strikes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from typing import Final, Literal

from sparkrig.guards.exact import contains_answer

ItemKind = Literal["arithmetic", "lookup", "format"]


@dataclass(frozen=True)
class LoadItem:
    kind: ItemKind
    prompt: str
    answer: str = ""  # the word or number that must appear as a word
    pattern: str = ""  # or: a regular expression the reply must contain (format items)
    distractors: tuple[str, ...] = ()  # lookups: the passage's other values, none may appear

    def is_right(self, reply: str) -> bool:
        """The answer (or pattern) is in the reply and no other value of the passage is: a reply
        that echoes the whole passage is not right."""
        if any(contains_answer(reply, other) for other in self.distractors):
            return False
        if self.pattern:
            return re.search(self.pattern, reply, re.IGNORECASE) is not None
        return contains_answer(reply, self.answer)


_NUMBER_ONLY: Final = "Answer with the number only."
ITEMS_PER_FAMILY: Final = 11
_COLOURS: Final = ("red", "blue", "green", "white", "black", "yellow", "grey")
_NAMES: Final = ("Ada", "Ben", "Cora", "Dan", "Eva", "Finn", "Gia", "Hal", "Ines", "Jon")
_PRODUCT_FIRST: Final = (10, 20, 11, 12, 25, 15, 40, 100)
_JSON_KEYS: Final = ("id", "code")
_PLACES: Final = ("Orla", "Brin", "Cask", "Dunmore", "Elm", "Fay", "Gort")
_HOURS: Final = ("six", "seven", "eight", "nine")


def _product(i: int) -> LoadItem:
    a, b = _PRODUCT_FIRST[i % len(_PRODUCT_FIRST)], 2 + (5 * i) % 9
    return LoadItem("arithmetic", f"What is {a} times {b}? {_NUMBER_ONLY}", str(a * b))


def _sum(i: int) -> LoadItem:
    a, b = 10 * (1 + (3 * i) % 9), 5 * (1 + (7 * i) % 8)
    return LoadItem("arithmetic", f"What is {a} + {b}? {_NUMBER_ONLY}", str(a + b))


def _door_codes(i: int) -> LoadItem:
    """Three doors, each with a four-digit code; the question names one of them."""
    colours = [_COLOURS[(i + k * 2) % len(_COLOURS)] for k in range(3)]
    codes = [str(1000 + (1237 * (3 * i + k) + 411) % 9000) for k in range(3)]
    passage = " ".join(
        f"The code for the {c} door is {n}." for c, n in zip(colours, codes, strict=True)
    )
    asked = (i + 1) % 3
    others = tuple(code for k, code in enumerate(codes) if k != asked)
    prompt = f"{passage}\n\nWhat is the code for the {colours[asked]} door?"
    return LoadItem("lookup", prompt, codes[asked], distractors=others)


def _rooms(i: int) -> LoadItem:
    """Three people, each in a three-digit room; the question names one of them."""
    names = [_NAMES[(i + k * 3) % len(_NAMES)] for k in range(3)]
    rooms = [str(100 + (37 * (3 * i + k) + 11) % 800) for k in range(3)]
    passage = " ".join(f"{n} is in room {r}." for n, r in zip(names, rooms, strict=True))
    asked = (2 * i) % 3
    others = tuple(room for k, room in enumerate(rooms) if k != asked)
    prompt = f"{passage}\n\nWhich room is {names[asked]} in? {_NUMBER_ONLY}"
    return LoadItem("lookup", prompt, rooms[asked], distractors=others)


def _ferry_pier(i: int) -> LoadItem:
    """One fact in one sentence: the pier a ferry leaves from (the hour is a word)."""
    place, hour = _PLACES[i % len(_PLACES)], _HOURS[i % len(_HOURS)]
    pier = 2 + (13 * i) % 60
    passage = f"The ferry to {place} leaves from pier {pier} at {hour} in the morning."
    prompt = f"{passage}\n\nWhich pier does the ferry to {place} leave from? {_NUMBER_ONLY}"
    return LoadItem("lookup", prompt, str(pier))


def _json_value(i: int) -> LoadItem:
    key, value = _JSON_KEYS[i % len(_JSON_KEYS)], 10 + (17 * i) % 90
    prompt = f'Reply with a JSON object with the key "{key}" and the value {value}.'
    return LoadItem("format", prompt, pattern=rf'\{{\s*"{key}"\s*:\s*"?{value}"?\s*[,}}]')


FAMILIES: Final[tuple[Callable[[int], LoadItem], ...]] = (
    _product,
    _door_codes,
    _json_value,
    _sum,
    _ferry_pier,
    _rooms,
)


def load_items(per_family: int = ITEMS_PER_FAMILY) -> tuple[LoadItem, ...]:
    """`per_family` items of each family, interleaved (one of each in turn), so that any run of
    replies a fault strikes spans every family and both reply paths."""
    rounds = ((family(i) for family in FAMILIES) for i in range(per_family))
    return tuple(chain.from_iterable(rounds))


LOAD_ITEMS: Final = load_items()
