"""What a bench run measures, decided from the command line's values before any request: the
suites, and `BenchSettings` with the defaults that hang on other choices (a paired run's rounds
and samples, the max-load search's one suite and one round). Every contradiction is refused in
one line naming the flags, so `sparkrig bench` is left with wiring."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sparkrig import defaults
from sparkrig.bench.arrival_spec import Arrivals, parse_arrivals
from sparkrig.bench.run import check_suites
from sparkrig.bench.settings import BenchSettings
from sparkrig.bench.slo import parse_slo
from sparkrig.client.http_failures import checked_base_url
from sparkrig.errors import UsageError

ALL_SUITES = "decode,concurrency,prefill,spec"


def suites_and_settings(
    given: Mapping[str, Any],
    *,
    suite: str | None,
    local: bool,
    paired_with: str | None,
    paired_out: Path | None,
) -> tuple[list[str], BenchSettings]:
    """The suites to run and the run's settings. `given` holds the `BenchSettings` fields as the
    command line gave them (`--slo` and `--arrivals` as text, `--rounds` and `--max-samples`
    None where not given); `suite` is `--suite`'s text."""
    searched, rounds = max_load_suites(
        given["find_max_load"], suite, given["slo"], paired_with, given["rounds"]
    )
    rounds, max_samples = pairing_defaults(
        local, paired_with, paired_out, rounds, given["max_samples"]
    )
    suites = searched or suite_names(suite)
    slo = parse_slo(given["slo"]) if given["slo"] is not None else None
    chosen = {"rounds": rounds, "max_samples": max_samples, "slo": slo}
    settings = BenchSettings(
        **{**given, **chosen, "arrivals": open_loop(given["arrivals"], suites)}
    )
    return suites, settings


def suite_names(suite: str | None) -> list[str]:
    """`--suite decode,prefill` as known suite names (all four without it)."""
    return check_suites([name.strip() for name in (suite or ALL_SUITES).split(",") if name.strip()])


def pairing_defaults(
    local: bool,
    paired_with: str | None,
    paired_out: Path | None,
    rounds: int | None,
    max_samples: int | None,
) -> tuple[int, int]:
    """Rounds and samples a round, defaulted for a paired or a plain run; bad pairings refused."""
    if paired_with is not None:
        if local:
            raise UsageError(
                "--paired-with pairs two running servers — give the first one's URL, not --local"
            )
        checked_base_url(paired_with)
    elif paired_out is not None:
        raise UsageError("--paired-out names the --paired-with receipt — add --paired-with URL")
    paired = paired_with is not None
    if rounds is None:
        rounds = defaults.BENCH_PAIRED_ROUNDS if paired else defaults.BENCH_ROUNDS
    if max_samples is None:
        max_samples = defaults.BENCH_PAIRED_MAX_SAMPLES if paired else defaults.BENCH_MAX_SAMPLES
    return rounds, max_samples


def max_load_suites(
    find_max_load: bool,
    suite: str | None,
    slo: str | None,
    paired_with: str | None,
    rounds: int | None,
) -> tuple[list[str] | None, int | None]:
    """The one suite a --find-max-load run measures and its one round; (None, rounds) for a
    plain run. Refused, before any request, without an SLO or beside options it replaces (a
    probe is decided by its own samples: a second round would probe again)."""
    if not find_max_load:
        if suite is not None and "max-load" in suite:
            raise UsageError("the max-load search runs with --find-max-load — use that flag")
        return None, rounds
    if slo is None:
        raise UsageError(
            "--find-max-load searches for the highest load meeting an SLO — add --slo, e.g. "
            "--slo ttft_p99=2s"
        )
    if suite is not None:
        raise UsageError("--find-max-load measures its own probes — drop --suite")
    if paired_with is not None:
        raise UsageError("--find-max-load searches one server — drop --paired-with")
    if rounds not in (None, 1):
        raise UsageError("--find-max-load measures each probe in one round — drop --rounds")
    return ["max-load"], 1


def open_loop(arrivals: str | None, suites: list[str]) -> Arrivals | None:
    """The parsed --arrivals, refused where no suite it shapes runs (only concurrency does)."""
    if arrivals is None:
        return None
    parsed = parse_arrivals(arrivals)
    if "concurrency" not in suites:
        raise UsageError(
            "--arrivals shapes the concurrency suite (the max-load search is a closed loop) — "
            "add concurrency to --suite, or drop --arrivals"
        )
    return parsed
