"""Guards: probes (one module per guard), the battery that runs them, and verdicts."""
