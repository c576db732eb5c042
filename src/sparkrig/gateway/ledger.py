"""The gateway's record of generation traffic: how many were served, which are in flight now,
which overlapped which, and what content each has received so far. Several faults depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(eq=False)
class TrackedRequest:
    seq: int = field(metadata={"description": "arrival order, from 0"})
    prompt_chars: int
    is_long: bool
    served_before: int = field(metadata={"description": "generation requests finished before"})
    neighbours: list[TrackedRequest] = field(
        default_factory=list,
        metadata={"description": "requests in flight at any moment while this one was"},
    )
    received: list[str] = field(default_factory=list, repr=False)
    block_corrupted: bool = False
    wrong_under_load: bool = False
    finished: bool = False

    @property
    def started_alone(self) -> bool:
        """No other generation request was in flight when this one arrived."""
        return not any(n.seq < self.seq for n in self.neighbours)

    @property
    def received_text(self) -> str:
        return "".join(self.received)


class ServingLedger:
    def __init__(self) -> None:
        self.served = 0
        self.in_flight: dict[int, TrackedRequest] = {}
        self._next_seq = 0

    def arrive(self, prompt_chars: int, long_prompt_chars: int) -> TrackedRequest:
        others = list(self.in_flight.values())
        request = TrackedRequest(
            seq=self._next_seq,
            prompt_chars=prompt_chars,
            is_long=prompt_chars >= long_prompt_chars,
            served_before=self.served,
            neighbours=others,
        )
        self._next_seq += 1
        for other in others:
            other.neighbours.append(request)
        self.in_flight[request.seq] = request
        return request

    def depart(self, request: TrackedRequest) -> None:
        if self.in_flight.pop(request.seq, None) is None:
            return
        request.finished = True
        self.served += 1
        # a finished request needs no donors any more; dropping them keeps memory bounded
        request.neighbours = []

    def long_in_flight(self) -> list[TrackedRequest]:
        return [request for request in self.in_flight.values() if request.is_long]


def cross_talk_span(request: TrackedRequest, chars: int, final: bool) -> str:
    """Up to `chars` characters of a neighbour's received content: the neighbour that has most
    of it (the earliest arrival on a tie). While that neighbour is still short of `chars` and
    streaming, wait for more, unless this is the reply's last chance."""
    donors = [n for n in request.neighbours if n.received]
    if not donors:
        return ""
    donor = max(donors, key=lambda n: (min(len(n.received_text), chars), -n.seq))
    text = donor.received_text
    if len(text) < chars and not donor.finished and not final:
        return ""
    return text[:chars]
