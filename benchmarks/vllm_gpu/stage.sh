#!/usr/bin/env bash
# Stage one piece that traveled to the GPU host: stage.py checks it against its manifest and
# copies it into /tmp/vllm-stage (VLLM_STAGE_DIR). Usage: bash benchmarks/vllm_gpu/stage.sh PIECE_DIR
set -euo pipefail
exec python3 "$(dirname "${BASH_SOURCE[0]}")/stage.py" "$@"
