#!/usr/bin/env bash
# Runs ptoserve and the two echo ceilings side by side and measures them
# with ptobench, as docs/PERFORMANCE.md describes: servers pinned to core 0,
# the load generator to core 1, optimized builds; every point runs on each
# server in turn before the next point. Prints CSV:
# label,mode,concurrency,opcode,shape,dtype,requests/s,tiles/s,p50_us,p90_us,p99_us,max_us,errors
#
#   bench/service_bench.sh [DURATION] > results.csv
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-3s}
bazel build -c opt //server:ptoserve //bench:echo_server \
  //bench:plain_echo_server //bench:ptobench >&2

pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT

start() {  # NAME PORT BINARY FLAGS...
  local name=$1 port=$2 bin=$3
  shift 3
  taskset -c 0 "$bin" --address="127.0.0.1:$port" "$@" >"/tmp/service_bench.$name.log" 2>&1 &
  pids+=($!)
}
start plain-echo 50070 bazel-bin/bench/plain_echo_server
start echo 50071 bazel-bin/bench/echo_server
start batched 50072 bazel-bin/server/ptoserve
# Off: the other ptoserve holds the default metrics port.
start unbatched 50073 bazel-bin/server/ptoserve --max_batch_size=1 --metrics_address= --http_address=
sleep 1

bench() {  # LABEL PORT FLAGS...
  local label=$1 port=$2
  shift 2
  taskset -c 1 bazel-bin/bench/ptobench --server="127.0.0.1:$port" --format=csv \
    --csv_header=false --label="$label" --duration="$duration" --warmup=1s "$@" || true
}

echo "label,mode,concurrency,opcode,shape,dtype,requests_per_s,tiles_per_s,p50_us,p90_us,p99_us,max_us,errors"
for c in 1 2 4 8 16 32 64; do
  bench plain-echo 50070 --check=false --concurrency=$c
  bench plain-echo-stream 50070 --check=false --mode=stream --concurrency=$c
  bench echo 50071 --check=false --concurrency=$c
  bench ptoserve-unary 50072 --concurrency=$c
  bench ptoserve-unary-unbatched 50073 --concurrency=$c
  bench ptoserve-stream 50072 --mode=stream --concurrency=$c
  bench ptoserve-stream-unbatched 50073 --mode=stream --concurrency=$c
  bench ptoserve-batch 50072 --mode=batch --batch=32 --stream_depth=128 --concurrency=$c
done
for c in 1 8; do
  bench plain-echo 50070 --check=false --concurrency=$c --shape=256x256
  bench echo 50071 --check=false --concurrency=$c --shape=256x256
  bench ptoserve-unary 50072 --concurrency=$c --shape=256x256
done
