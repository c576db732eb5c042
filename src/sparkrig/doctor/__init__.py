"""Host, fabric and service checks: raw tool output collected once per node, then pure check
functions that turn captured text into findings, each with what was seen, why and the fix."""
