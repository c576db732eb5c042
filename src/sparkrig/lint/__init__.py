"""`sparkrig lint`: a cluster file checked against the pitfalls of the field reports. Each rule
is a pure function of the cluster and its serving profile (`rules_model_shape` also reads the
model's config.json where it is on this machine); every finding says how to fix it and which
report it comes from."""

from sparkrig.lint import rules_engine, rules_fabric, rules_model_shape, rules_vllm
from sparkrig.lint.findings import LintFinding, Rule, lint_cluster, rules

__all__ = [
    "LintFinding",
    "Rule",
    "lint_cluster",
    "rules",
    "rules_engine",
    "rules_fabric",
    "rules_model_shape",
    "rules_vllm",
]
