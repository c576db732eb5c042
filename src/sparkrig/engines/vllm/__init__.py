"""vLLM: the per-node `vllm serve` / `ray start` commands and its /metrics names."""
