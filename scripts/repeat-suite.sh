#!/usr/bin/env bash
# Runs the README's two commands (`npm ci`, then `npm test`) on fresh clones, again and again, to
# find tests that fail only sometimes (issue 25). Every other run has two CPU-hog processes beside
# it, as on a shared CI machine.
#
#   bash scripts/repeat-suite.sh [RUNS] [REPO]      # defaults: 10 runs, this checkout's HEAD
#
# Each run clones REPO into a temporary folder. A summary line per run, and the failed tests'
# names, go to stdout; each run's whole output is kept in $LOG_DIR (default: a temporary folder,
# printed at the start). Exits non-zero when any run failed.
set -uo pipefail
runs=${1:-10}
repo=${2:-$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)}
log_dir=${LOG_DIR:-$(mktemp -d -t voicewire-repeat-XXXXXX)}
mkdir -p "$log_dir"
echo "repeat-suite: $runs runs of $repo at $(git -C "$repo" rev-parse --short HEAD), logs in $log_dir"

hogs=()
stop_hogs() { [ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null; hogs=(); }
trap 'stop_hogs' EXIT INT TERM

failed_runs=0
for i in $(seq 1 "$runs"); do
  work=$(mktemp -d -t voicewire-run-XXXXXX)
  label="run $i"
  if [ $((i % 2)) -eq 0 ]; then
    label="$label (2 CPU hogs)"
    for _ in 1 2; do node -e 'for (;;) {}' & hogs+=($!); done
  fi
  start=$(date +%s)
  log="$log_dir/run-$i.log"
  if git clone -q "$repo" "$work/voicewire" >"$log" 2>&1 &&
    (cd "$work/voicewire" && npm ci --no-audit --no-fund && npm test) >>"$log" 2>&1; then
    status=passed
  else
    status=FAILED
    failed_runs=$((failed_runs + 1))
  fi
  stop_hogs
  echo "$label: $status in $(($(date +%s) - start)) s"
  # vitest marks a failed test with × (or FAIL for a file); strip colours first.
  [ "$status" = FAILED ] && sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ *(×|FAIL) ' | sort -u | sed 's/^/    /'
  rm -rf "$work"
done
echo "repeat-suite: $((runs - failed_runs)) passed, $failed_runs failed"
[ "$failed_runs" -eq 0 ]
