"""`doctor --server URL`: the running server against the cluster file. `live_checks` is pure
(the /v1/models body and the /metrics text in, findings out); `live_findings` fetches them."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from sparkrig.client.endpoint import EndpointClient
from sparkrig.client.http_failures import describe_client_error
from sparkrig.client.metrics import parse_metrics
from sparkrig.config.cluster import Cluster
from sparkrig.doctor.model import DoctorFinding
from sparkrig.engines.registry import adapter_for
from sparkrig.errors import MetricsError
from sparkrig.outside_numbers import float_or_none

SOURCE = "docs/doctor.md (live server)"


def _finding(check: str, severity: str, seen: str, why: str, fix: str) -> DoctorFinding:
    return DoctorFinding.model_validate(
        {
            "check": check,
            "severity": severity,
            "node": "live",
            "seen": seen,
            "why": why,
            "source": SOURCE,
            "fix": fix,
        }
    )


def live_checks(
    models: Any, metrics_text: str | None, cluster: Cluster | None
) -> list[DoctorFinding]:
    findings: list[DoctorFinding] = []
    entries = models.get("data") if isinstance(models, dict) else None
    ids = [str(e.get("id")) for e in entries or [] if isinstance(e, dict)]
    if not ids:
        findings.append(
            _finding(
                "live-model",
                "error",
                f"/v1/models lists no model: {str(models)[:120]!r}",
                "a server without a model answers nothing",
                "check the URL is the engine's API",
            )
        )
    elif cluster is not None and cluster.model is not None and cluster.model.api_name not in ids:
        findings.append(
            _finding(
                "live-model",
                "error",
                f"serving {', '.join(ids)}; the cluster file says {cluster.model.api_name}",
                "an old configuration is serving (a unit restarted it, or the wrong server)",
                "`sparkrig down CLUSTER.toml --apply`, then `sparkrig up CLUSTER.toml --apply`",
            )
        )
    if cluster is not None and cluster.profile.max_model_len is not None:
        lengths = [e.get("max_model_len") for e in entries or [] if isinstance(e, dict)]
        served = next((n for n in lengths if isinstance(n, int)), None)
        if served is not None and served != cluster.profile.max_model_len:
            findings.append(
                _finding(
                    "live-flags",
                    "error",
                    f"max_model_len {served}; the cluster file says "
                    f"{cluster.profile.max_model_len}",
                    "the server runs other flags than the file: KV sizing and speed figures differ",
                    "restart through `sparkrig up CLUSTER.toml --apply` so the file's flags apply",
                )
            )
    findings += _metrics_findings(metrics_text, cluster)
    return findings


def _metrics_findings(text: str | None, cluster: Cluster | None) -> list[DoctorFinding]:
    fix = "enable metrics (llama-server --metrics; vLLM serves them by default)"
    if text is None:
        return [
            _finding(
                "live-metrics",
                "warning",
                "/metrics did not answer",
                "sparkrig's speed figures come from the server's counters",
                fix,
            )
        ]
    try:
        snapshot = parse_metrics(text)
    except MetricsError as exc:
        return [
            _finding(
                "live-metrics",
                "warning",
                str(exc).split(" — ")[0],
                "sparkrig's speed figures come from the server's counters",
                fix,
            )
        ]
    expected = (
        adapter_for(cluster.engine.kind).metrics_name
        if cluster is not None and cluster.engine is not None
        else None
    )
    if snapshot.engine == "vllm" and cluster is not None:
        info = snapshot.samples.get("vllm:cache_config_info", [])
        if info:
            findings = _cache_config_findings(info[0].labels, cluster)
            if findings:
                return findings
    if snapshot.engine is None or (expected is not None and snapshot.engine != expected):
        return [
            _finding(
                "live-metrics",
                "error",
                f"/metrics comes from {snapshot.engine or 'an unknown engine'}"
                + (f"; the cluster file runs {expected}" if expected else ""),
                "the URL does not reach the engine the cluster file starts",
                "point --server at the head's API (`sparkrig status` prints it)",
            )
        ]
    return []


def _cache_config_findings(labels: dict[str, str], cluster: Cluster) -> list[DoctorFinding]:
    """vLLM's `cache_config_info` labels against the profile's flags, where the file sets them."""
    profile = cluster.profile
    wanted: dict[str, float | int | str | None] = {
        "gpu_memory_utilization": profile.gpu_memory_utilization,
        "block_size": profile.block_size,
        "cache_dtype": profile.kv_cache_dtype,
    }
    if labels.get("_block_size_resolved") == "True":
        # vLLM reports the block size it resolved per KV-cache group there, not the flag (a
        # DeepSeek-V4 server started with --block-size 256 reports "4": tests/fixtures/
        # vllm_metrics.txt); the flag is not in the labels to compare
        wanted.pop("block_size")
    differ = []
    for label, value in wanted.items():
        served = labels.get(label)
        if value is None or served is None:
            continue
        same = (
            float_or_none(served) == float(value)
            if isinstance(value, int | float) and float_or_none(served) is not None
            else served == str(value)
        )
        if not same:
            differ.append(f"{label} {served} (the file: {value})")
    if not differ:
        return []
    return [
        _finding(
            "live-flags",
            "error",
            "vllm:cache_config_info: " + "; ".join(differ),
            "the server runs other flags than the file: KV sizing and speed figures differ",
            "restart through `sparkrig up CLUSTER.toml --apply` so the file's flags apply",
        )
    ]


async def _fetch(url: str) -> tuple[Any, str | None]:
    async with EndpointClient(url) as client:
        models = await client.get_json("/v1/models")
        try:
            metrics: str | None = await client.get_text("/metrics")
        except Exception:  # noqa: BLE001 - a missing /metrics is a finding, not a crash
            metrics = None
    return models, metrics


def live_findings(url: str, cluster: Cluster | None) -> list[DoctorFinding]:
    try:
        models, metrics = asyncio.run(_fetch(url))
    except Exception as exc:  # noqa: BLE001 - any failure to reach the server is the finding
        said = (
            describe_client_error(exc, f"{url.rstrip('/').removesuffix('/v1')}/v1/models")
            if isinstance(exc, aiohttp.ClientError | TimeoutError)
            else f"{url}: {exc}"
        )
        seen, _, fix = said.partition(" — ")
        return [
            _finding(
                "live-reachable",
                "error",
                seen[:300],
                "--server checks need the running server",
                fix or "check the URL; `sparkrig status`",
            )
        ]
    return live_checks(models, metrics, cluster)
