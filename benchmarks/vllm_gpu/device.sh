#!/bin/sh
# One device call: stage the pieces named (if any), assemble once all are there, put sparkrig's
# own wheels (.vllm-stage/sparkrig-deps, when it traveled) in /tmp/sparkrig-site, then run a
# stage group.   sh benchmarks/vllm_gpu/device.sh GROUP [stages.py options] [-- PIECE ...]
set -u
group=$1; shift
opts=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts="$opts $1"; shift; done
[ $# -gt 0 ] && shift
for piece in "$@"; do bash benchmarks/vllm_gpu/stage.sh "$piece" || exit 1; done
if [ -d .vllm-stage/sparkrig-deps ] && [ ! -e /tmp/sparkrig-site/.done ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/sparkrig-site \
    .vllm-stage/sparkrig-deps/*.whl && touch /tmp/sparkrig-site/.done
fi
[ -x /tmp/vllm-bin/vllm ] || python3 benchmarks/vllm_gpu/assemble.py || exit 1
[ "$group" = none ] && exit 0
# shellcheck disable=SC2086
exec python3 benchmarks/vllm_gpu/stages.py "$group" $opts
