#!/usr/bin/env bash
# First contact: README.md's two commands, run as a newcomer would run them,
# on a fresh Debian 12 root (debootstrap's minbase, like the debian:12
# image: nothing of ours installed), so that a package only a used machine
# has cannot pass CI.
#
#   tools/fresh_root.sh [--keep]
#
# Clones this repository's HEAD into a copy of the bare root and, chrooted
# there as root:
#   1. serve: `tools/serve.sh` (installs, builds optimized, serves on free
#      ports); with what it installed, as README's first requests use it,
#      `ptoctl health`, one TAND, a job over HTTP with curl and one through
#      the Python client, each checked against its expected
#      result; SIGTERM; the server must exit 0;
#   2. test: `tools/test.sh` limited to its smoke stage: the tests of what a
#      fresh root can break (a package setup.sh forgot, a user or permission
#      a bare root lacks, a name it does not resolve; tools/test.sh lists
#      them and why), built optimized as serve.sh built, and every benchmark
#      built. The rest of the suite runs on the CI machine itself, on the
#      same commit.
# The bare root is cached (tools/lib/debian_root.sh); the packages are
# installed anew every run. --keep leaves the root in place for a look.
# What serve.sh built stays in a Bazel disk cache
# (~/.cache/ptoserve-image-disk-cache) that tools/image.sh lends the image's
# build stage, which runs the same build on the same kind of root.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/lib/debian_root.sh

keep=false
[[ ${1:-} == --keep ]] && keep=true
if [[ $(id -u) != 0 ]]; then
  echo "fresh_root: needs root (debootstrap, chroot, mount)" >&2
  exit 1
fi

start=$SECONDS
tarball=$(debian_root_tarball)
work=$(mktemp -d "${TMPDIR:-/tmp}/ptoserve-fresh-root.XXXXXX")
root=$work/root
cleanup() {
  if $keep; then
    echo "fresh_root: root kept at $root" >&2
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
debian_root_unpack "$tarball" "$root"
git clone -q --no-local . "$root/src/ptoserve"
git -C "$root/src/ptoserve" checkout -q "$(git rev-parse HEAD)"
debian_root_log "root ready in $((SECONDS - start)) s ($(git rev-parse --short HEAD))"

debian_root_run "$root" '
cd /src/ptoserve
stage() { echo "=== fresh root: $1"; }
elapsed() { echo "=== fresh root: $1: $(( $(date +%s) - $2 )) s"; }

t=$(date +%s)
stage "tools/serve.sh"
tools/serve.sh --address=127.0.0.1:0 --metrics_address=127.0.0.1:0 --http_address=127.0.0.1:0 >/tmp/serve.log 2>&1 &
server=$!
for _ in $(seq 1 1800); do
  grep -q "HTTP/JSON API on" /tmp/serve.log && break
  kill -0 $server 2>/dev/null || { cat /tmp/serve.log; exit 1; }
  sleep 1
done
grep -q "HTTP/JSON API on" /tmp/serve.log || { cat /tmp/serve.log; exit 1; }
address=$(sed -n "s/.*listening on \([^ ]*\).*/\1/p" /tmp/serve.log)
echo "serving on $address"
# What the first requests of the README use, as serve.sh installed it: ptoctl by
# name, curl, and the Python client for /usr/bin/python3.
ptoctl --server=$address health
got=$(ptoctl --server=$address tand --dtype=int16 --shape=1x4 --src0=255,-1,7,12 --src1=15)
echo "$got"
echo "$got" | grep -qE "^ +15 +15 +7 +12$" || { echo "unexpected TAND result"; exit 1; }
http=$(sed -n "s|.*HTTP/JSON API on \([^ ]*\).*|\1|p" /tmp/serve.log)
curl -sf -H "Content-Type: application/json" --data @examples/first.json \
  "$http/v1/jobs:execute" | grep -q "\"values\":\[0,2,2,1\]" ||
  { echo "unexpected answer to examples/first.json over HTTP"; exit 1; }
(cd / && /usr/bin/python3 -c "
import sys
import numpy as np
from ptoserve_client import Client
with Client(sys.argv[1]) as client:
    a = np.array([[12, 10, 6, 5]], dtype=np.int32)
    assert client.tand(a, 3).dst.tolist() == [[0, 2, 2, 1]]
print(\"the Python client, installed by serve.sh: ok\")" "$address") || exit 1
metrics=$(sed -n "s|.*metrics on http://\([^/]*\)/metrics.*|\1|p" /tmp/serve.log)
exec 3<>"/dev/tcp/${metrics%:*}/${metrics##*:}"
printf "GET /metrics HTTP/1.0\r\n\r\n" >&3
grep -m1 "^ptoserve_build_info" <&3 || { echo "no ptoserve_build_info in /metrics"; exit 1; }
exec 3<&-
kill -TERM $server
wait $server && rc=0 || rc=$?
cat /tmp/serve.log
[[ $rc == 0 ]] || { echo "ptoserve exited $rc after SIGTERM"; exit 1; }
elapsed "tools/serve.sh" $t

t=$(date +%s)
stage "tools/test.sh (smoke stage)"
PTOSERVE_TEST_STAGES=smoke tools/test.sh
elapsed "tools/test.sh (smoke stage)" $t
bazel shutdown
'
image_cache=$HOME/.cache/ptoserve-image-disk-cache
rm -rf "$image_cache"
if [[ -d $root/root/.cache/ptoserve-disk-cache ]]; then
  mkdir -p "$(dirname "$image_cache")"
  mv "$root/root/.cache/ptoserve-disk-cache" "$image_cache"
fi
debian_root_log "fresh root: passed in $((SECONDS - start)) s"
