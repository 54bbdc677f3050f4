#!/usr/bin/env bash
# Builds ptoserve optimized and starts it on its defaults (127.0.0.1:50051,
# target host). Flags are passed on: tools/serve.sh --default_target=a2a3.
# The build keeps its outputs in the disk cache tools/test.sh uses too
# (PTOSERVE_DISK_CACHE; empty turns it off).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
bazel build -c opt --disk_cache="${PTOSERVE_DISK_CACHE-$HOME/.cache/ptoserve-disk-cache}" \
  //server:ptoserve //client:ptoctl
exec bazel-bin/server/ptoserve "$@"
