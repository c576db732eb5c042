"""llama.cpp: the embedded engine (built from source), its server command and metric names."""
