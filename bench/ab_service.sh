#!/usr/bin/env bash
# A/B of two ptoserve builds on the unary path: each server alone on core 0,
# ptobench on core 1, the points below for each build in turn, ROUNDS times
# (interleaved, so that drift hits both). Prints CSV:
# round,build,target,opcode,shape,concurrency,requests_per_s,p50_us,p99_us,errors
#
#   bench/ab_service.sh BEFORE_PTOSERVE AFTER_PTOSERVE [ROUNDS] > ab.csv
#
# e.g. with a worktree of the older commit built by
# `bazel build -c opt //server:ptoserve` there.
set -euo pipefail
cd "$(dirname "$0")/.."
before=$1 after=$2 rounds=${3:-3}
bazel build -c opt //bench:ptobench >&2
points=("host tand 16x16 1" "host tand 16x16 8" "host tand 256x256 8"
        "a5 tand 16x16 8" "a5 txor 64x64 8" "a2a3 txor 16x16 8")
port=50400
echo "round,build,target,opcode,shape,concurrency,requests_per_s,p50_us,p99_us,errors"
for round in $(seq "$rounds"); do
  for build in before after; do
    bin=$before
    [ "$build" = after ] && bin=$after
    port=$((port + 1))
    taskset -c 0 "$bin" --address="127.0.0.1:$port" --metrics_address= --http_address= \
      >"/tmp/ab_service.$build.log" 2>&1 &
    pid=$!
    sleep 1
    for point in "${points[@]}"; do
      read -r target opcode shape concurrency <<<"$point"
      line=$(taskset -c 1 bazel-bin/bench/ptobench --server="127.0.0.1:$port" \
        --target="$target" --opcode="$opcode" --shape="$shape" \
        --concurrency="$concurrency" --duration=3s --warmup=1s --format=csv \
        --csv_header=false 2>&1 | tail -1)
      echo "$round,$build,$target,$opcode,$shape,$concurrency,$(cut -d, -f7,9,11,13 <<<"$line")"
    done
    kill "$pid"
    while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
  done
done
