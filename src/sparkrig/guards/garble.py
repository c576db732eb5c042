"""Guard 9, garble under concurrency: cold first prompts at c = 1, 2, 4, every reply scanned by
the detectors (markup leaks, U+FFFD, loops, character runs, script drift, mid-word starts).

Speculative decoding garbled cold, concurrent first prompts, warm ones stayed clean
(docs/field-notes.md#cold-concurrent-garble). A per-request salt at the head of the prompt keeps
each one cold.
"""

from __future__ import annotations

import uuid
from typing import Final

from sparkrig.detectors.text import all_findings
from sparkrig.guards.context import GuardContext
from sparkrig.guards.verdict import GuardResult, failed, passed

NAME: Final = "garble"
LEVELS: Final = (1, 2, 4)
REPLY_TOKENS: Final = 64
TASKS: Final = (
    "Explain how a bicycle gear works.",
    "Write a short note thanking a neighbour for help.",
    "Describe the water cycle in simple words.",
    "Give three reasons to learn to swim.",
    "Write a haiku about snow.",
    "Explain what a spreadsheet is used for.",
    "Describe a busy market in the morning.",
)


def salted(task: str) -> str:
    return f"[session {uuid.uuid4().hex[:12]}]\n{task}"


async def garble_guard(context: GuardContext) -> GuardResult:
    scanned, warnings = 0, []
    task_index = 0
    for level in LEVELS:
        tasks = [TASKS[(task_index + i) % len(TASKS)] for i in range(level)]
        task_index += level
        records = await context.send_all(
            [context.chat(salted(t), max_tokens=REPLY_TOKENS) for t in tasks]
        )
        for task, record in zip(tasks, records, strict=True):
            if record.error is not None:
                return failed(NAME, f"c={level}: a request failed: {record.error.message}")
            scanned += 1
            for finding in all_findings(record.content):
                where = f"c={level}, {task!r}: {finding.detector}"
                if finding.severity == "error":
                    return failed(
                        NAME,
                        f"{where} — {finding.message}",
                        evidence_text=finding.evidence,
                        reply=record.content[:2000],
                    )
                warnings.append(f"{where}: {finding.evidence!r}")
    note = f"; warnings: {'; '.join(warnings[:2])}" if warnings else ""
    return passed(
        NAME,
        f"{scanned} cold replies at c={','.join(map(str, LEVELS))}: no garble{note}",
        warnings=warnings,
    )
