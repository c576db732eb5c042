"""The bundled items of the accuracy-under-load guard: made by the project, each with an exact,
checkable answer — arithmetic with known results, a fact looked up in a given passage, a reply
in a stated format.

Chosen on the bundled SmolLM2-135M at temperature 0 alone (the real llama-server, 24 tokens per
reply): 16 of the 24 are right. The other 8 stay in because a stronger model gets them right,
and the guard compares the server with itself, alone against loaded, so a wrong item is just one
that cannot be lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Literal

from sparkrig.guards.exact import contains_answer

ItemKind = Literal["arithmetic", "lookup", "format"]


@dataclass(frozen=True)
class LoadItem:
    kind: ItemKind
    prompt: str
    answer: str = ""  # the word or number that must appear as a word
    pattern: str = ""  # or: a regular expression the reply must contain (format items)

    def is_right(self, reply: str) -> bool:
        if self.pattern:
            return re.search(self.pattern, reply, re.IGNORECASE) is not None
        return contains_answer(reply, self.answer)


_NUMBER_ONLY: Final = "Answer with the number only."


def _product(a: int, b: int) -> LoadItem:
    return LoadItem("arithmetic", f"What is {a} times {b}? {_NUMBER_ONLY}", str(a * b))


def _sum(a: int, b: int) -> LoadItem:
    return LoadItem("arithmetic", f"What is {a} + {b}? {_NUMBER_ONLY}", str(a + b))


def _lookup(passage: str, question: str, answer: str) -> LoadItem:
    return LoadItem("lookup", f"{passage}\n\n{question}", answer)


LOAD_ITEMS: Final = (
    _product(12, 3),
    _product(11, 11),
    _product(25, 4),
    _product(7, 7),
    _product(4, 13),
    _product(15, 3),
    _product(20, 6),
    _product(3, 4),  # the bundled model misses it
    _sum(23, 45),  # misses it
    _sum(120, 37),  # misses it
    _lookup(
        "The ferry to Orla leaves from pier 12 at seven in the morning.",
        f"Which pier does the ferry to Orla leave from? {_NUMBER_ONLY}",
        "12",
    ),
    _lookup(
        "Mara keeps 14 goats and 3 horses on her farm.",
        f"How many goats does Mara keep? {_NUMBER_ONLY}",
        "14",
    ),
    _lookup(
        "The library on Fenn Street opened in 1987 and has 40 reading desks.",
        f"In which year did the library on Fenn Street open? {_NUMBER_ONLY}",
        "1987",
    ),
    _lookup(
        "The red train has 9 carriages and the blue train has 6.",
        f"How many carriages does the red train have? {_NUMBER_ONLY}",
        "9",
    ),
    _lookup(
        "The password for the shed is 4821.",
        f"What is the password for the shed? {_NUMBER_ONLY}",
        "4821",
    ),
    _lookup(  # misses it (answers 210)
        "Room 315 is the chemistry lab; room 210 is the music room.",
        f"Which room is the chemistry lab? {_NUMBER_ONLY}",
        "315",
    ),
    _lookup(  # misses it
        "Tomas was born in the town of Velk, by the river Ansa.",
        "In which town was Tomas born? Answer in one word.",
        "Velk",
    ),
    _lookup(  # misses it
        "Lena's cat is called Pepper and her dog is called Biscuit.",
        "What is the name of Lena's dog? Answer in one word.",
        "Biscuit",
    ),
    LoadItem("format", "Reply with exactly the word yes.", pattern=r"^\s*yes\b"),
    LoadItem(
        "format",
        "Write the numbers 1 to 5 separated by commas.",
        pattern=r"\b1,\s*2,\s*3,\s*4,\s*5\b",
    ),
    LoadItem(
        "format",
        'Reply with a JSON object with the key "name" and the value "Ada".',
        pattern=r'\{\s*"name"\s*:\s*"Ada"',
    ),
    LoadItem("format", "Write the number seven as a digit.", answer="7"),
    LoadItem(  # misses it
        "format", "Write the word blue in capital letters and nothing else.", pattern=r"(?-i:BLUE)"
    ),
    LoadItem(  # misses it
        "format",
        "Write the letters A, B and C separated by dashes.",
        pattern=r"\bA\s*-\s*B\s*-\s*C\b",
    ),
)
