#!/bin/sh
# sparkrig's own CLI wheels at the versions of requirements-dev.lock, into
# .vllm-stage/sparkrig-deps (2.3 MiB; it travels with piece-4, and device.sh installs it into
# /tmp/sparkrig-site before PYTHONPATH's vLLM site): the host's typer 0.27.2 is older than the
# lock's, and wheels.lock keeps host versions where the host has the package.
set -eu
cd "$(dirname "$0")/../.."
pins=$(grep -i -E '^(typer|rich|platformdirs|pytest|pytest-asyncio|markdown-it-py|pygments|shellingham)==' requirements-dev.lock)
mkdir -p .vllm-stage/sparkrig-deps
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_17_x86_64 -d .vllm-stage/sparkrig-deps $pins
ls .vllm-stage/sparkrig-deps
