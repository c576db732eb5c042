#!/bin/sh
# The venv replay.py runs in: the vLLM 0.26.0 wheel without its dependencies (no CUDA is needed
# for the serving-layer code it imports), a CPU torch, and what vLLM imports on that path. The
# versions are the ones the committed record was made with (its provenance lists vllm, torch and
# transformers). TORCH overrides the torch requirement: on a machine whose pip does not hold a
# CPU build, TORCH='torch --index-url https://download.pytorch.org/whl/cpu'. BENCH=1 adds what
# `vllm bench serve` needs, for benchmarks/client_ceiling.py.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${SPARKRIG_REPLAY_DIR:-$HOME/.cache/sparkrig/vllm-replay}
VENV=$WORK/venv
WHEEL_DIR=$HOME/.cache/sparkrig/vllm-gpu/wheels  # where benchmarks/vllm_gpu/prepare.py keeps it
TORCH=${TORCH:-torch==2.13.0}
mkdir -p "$WORK"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
PIP="$VENV/bin/pip --disable-pip-version-check -q"
# shellcheck disable=SC2086  # TORCH may carry pip options
$PIP install $TORCH
WHEEL=$(ls "$WHEEL_DIR"/vllm-0.26.0-*.whl 2>/dev/null | head -1 || true)
if [ -n "$WHEEL" ]; then
    $PIP install --no-deps "$WHEEL"
else
    $PIP install --no-deps vllm==0.26.0
fi
$PIP install -r "$HERE/requirements.txt"
if [ "${BENCH:-0}" = 1 ]; then
    $PIP install -r "$HERE/requirements-bench.txt"
    "$VENV/bin/vllm" bench serve --help >/dev/null 2>&1
fi
"$VENV/bin/python" -c "import vllm.parser.deepseek_v4, vllm.tokenizers.deepseek_v4" 2>/dev/null
echo "ready: $VENV/bin/python $HERE/replay.py OUT.json --gguf GGUF [--wheel WHEEL]"
