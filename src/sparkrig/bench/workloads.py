"""Prompts for the bench suites. Distinct tasks, never one prompt with a tag: identical prompts
decode in lockstep and flatter concurrency figures (field report 004)."""

from __future__ import annotations

from sparkrig.client import ChatRequest

# decode suite: one prompt per content type; speculative decoding accepts more on regular text
DECODE_PROMPTS: dict[str, str] = {
    "count": "Count from 1 to 200, separated by commas.",
    "structured": (
        "Write SQL INSERT statements for a table people(id, name, city, age) with 20 rows of "
        "made-up data, one statement per line."
    ),
    "code": "Write a Python function that parses a CSV file and returns the average of a column.",
    "prose": "Write a short story about a lighthouse keeper who finds a message in a bottle.",
}

# concurrency suite: a different task for every stream
CONCURRENT_TASKS: tuple[str, ...] = (
    "Explain how a refrigerator keeps food cold.",
    "Write a poem about autumn leaves.",
    "List ten countries in Africa and their capitals.",
    "Describe the rules of chess in a paragraph.",
    "Write a recipe for pancakes.",
    "Explain why the sky is blue.",
    "Summarise the plot of a detective novel you invent.",
    "Give advice to someone learning to play the guitar.",
    "Describe a busy train station at rush hour.",
    "Explain what a binary search does, with an example.",
    "Write a letter thanking a teacher.",
    "Compare cats and dogs as pets.",
    "Describe how bread is baked.",
    "Write a dialogue between a robot and a gardener.",
    "Explain how vaccines work.",
    "Plan a three-day trip to the mountains.",
)


def chat(model: str, prompt: str, max_tokens: int) -> ChatRequest:
    """A temperature-0 chat request that asks for exactly `max_tokens` where the server allows
    (llama.cpp and vLLM honour ignore_eos), so every sample decodes the same length."""
    return ChatRequest(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        max_tokens=max_tokens,
        temperature=0.0,
        extra={"ignore_eos": True},
    )


def concurrent_prompts(streams: int) -> list[str]:
    if streams > len(CONCURRENT_TASKS):
        # past the catalogue, vary the task itself, not just a tag
        extra = [f"Write {i} facts about the number {i}." for i in range(streams)]
        return [*CONCURRENT_TASKS, *extra][:streams]
    return list(CONCURRENT_TASKS[:streams])
