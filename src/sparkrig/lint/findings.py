"""What a lint rule returns, and the registry (`sparkrig.registry`) that runs them all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from sparkrig.config.cluster import Cluster
from sparkrig.config.serving import ServingProfile
from sparkrig.registry import Registry


@dataclass(frozen=True)
class LintFinding:
    rule: str
    severity: Literal["error", "warning"]
    key: str  # dotted key the finding is about, e.g. profile.gpu_memory_utilization
    message: str  # what is wrong, with the numbers
    fix: str
    source: str  # the field report (seed file) behind the rule

    def line(self) -> str:
        return (
            f"{self.severity} [{self.rule}] {self.key}: {self.message} — {self.fix} ({self.source})"
        )


RuleCheck = Callable[[Cluster, ServingProfile, str], list[LintFinding]]


@dataclass(frozen=True)
class Rule:
    name: str
    summary: str
    source: str
    check: RuleCheck
    runtime: str | None = None
    """the runtime whose behaviour the rule rests on, where it is not every vLLM: every finding's
    message names it (tests/lint/test_rules.py holds each rule to that)"""


RULES: Registry[Rule] = Registry("lint rule")


def rule(
    name: str, summary: str, source: str, runtime: str | None = None
) -> Callable[[RuleCheck], RuleCheck]:
    """Register a rule; `check(cluster, profile, profile_key)` returns its findings. `runtime`
    names the runtime a rule's facts were measured on, when they hold for no other known."""

    def register(check: RuleCheck) -> RuleCheck:
        RULES.add(
            name, Rule(name=name, summary=summary, source=source, check=check, runtime=runtime)
        )
        return check

    return register


def rules() -> list[Rule]:
    """Every registered rule (`sparkrig.lint` imports the rule modules, which register)."""
    return RULES.entries()


def lint_cluster(cluster: Cluster, profile_name: str | None = None) -> list[LintFinding]:
    """Every finding for the chosen profile, or for [profile] and each of [profiles]."""
    chosen = (
        [(f"profiles.{profile_name}", cluster.chosen_profile(profile_name))]
        if profile_name
        else [("profile", cluster.profile)]
        + [(f"profiles.{name}", p) for name, p in cluster.profiles.items()]
    )
    findings: list[LintFinding] = []
    for key, profile in chosen:
        for entry in rules():
            for finding in entry.check(cluster, profile, key):
                if finding not in findings:
                    findings.append(finding)
    return findings
