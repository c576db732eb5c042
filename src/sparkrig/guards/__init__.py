"""Guards: pure text detectors, probes, the battery that runs them, and verdicts."""
