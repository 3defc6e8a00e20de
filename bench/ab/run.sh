#!/usr/bin/env bash
# Before/after, alternating: bench/ab/run.sh BEFORE_CHECKOUT REPEATS BENCH_ARGS...
# runs bench_fedclass_daemons.py with BENCH_ARGS on BEFORE_CHECKOUT, then on this checkout,
# REPEATS times (A B A B ...), each run printing its own centralized-vs-federated table.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
before="$(cd "$1" && pwd)"; repeats="$2"; shift 2
cd /tmp
for _ in $(seq "$repeats"); do
  for side in before after; do
    src="$here"; [ "$side" = before ] && src="$before"
    echo "== $side ($(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet || echo +)) $*"
    FEDANON_SRC="$src" PYTHONPATH="$here/bench/ab" nice -n 5 "$here/.venv/bin/python" \
      "$src/bench/bench_fedclass_daemons.py" "$@" | sed -n '1p;$p'
  done
done
