#!/usr/bin/env bash
# Builds the container image from deploy/Dockerfile and proves it serves.
#
#   tools/image.sh [--no-run]
#
# Engine: docker when a Docker engine answers, else podman (installed from
# Debian if missing), which builds with --isolation=chroot and
# --format docker (so that HEALTHCHECK is kept). When the engine has no
# debian:12 / debian:12-slim and cannot pull them (no registry reachable),
# both are imported from a debootstrapped bookworm root
# (tools/lib/debian_root.sh), with this machine's apt acquire settings.
#
# Then, unless --no-run, runs the image's entrypoint as its user (uid
# 10001): as a container where the engine can start one here, else chrooted
# into the image's exported root filesystem. Checks that it serves (ptoctl
# health and one TAND, from inside the image), that /metrics answers, and
# that SIGTERM stops it with exit status 0. Prints the image's size.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/lib/debian_root.sh

run=true
[[ ${1:-} == --no-run ]] && run=false
version=$(sed -n 's/.*kVersion\[\] = "\(.*\)";/\1/p' core/version.h)
image=ptoserve:$version
log() { debian_root_log "image: $*"; }
start=$SECONDS

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  engine=docker
  build=(docker build)
else
  if ! command -v podman >/dev/null; then
    if [[ $(id -u) != 0 ]]; then
      echo "image: needs docker or podman (apt-get install podman, as root)" >&2
      exit 1
    fi
    log "installing podman"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      podman >/dev/null
  fi
  engine=podman
  build=(podman build --isolation=chroot --format docker)
  # What tools/fresh_root.sh built from this kind of root, lent to the
  # build stage (deploy/Dockerfile uses it when it is there).
  image_cache=$HOME/.cache/ptoserve-image-disk-cache
  if [[ -d $image_cache ]]; then
    build+=(--volume "$image_cache:/bazel-disk-cache")
  fi
fi
log "engine: $engine"

# The base images, imported when they are not there and cannot be pulled.
for base in debian:12 debian:12-slim; do
  if $engine image inspect "$base" >/dev/null 2>&1; then continue; fi
  if timeout 60 $engine pull -q "$base" >/dev/null 2>&1; then continue; fi
  log "no registry: importing $base from a debootstrapped bookworm root"
  tarball=$(debian_root_tarball)
  dir=$(mktemp -d "${TMPDIR:-/tmp}/ptoserve-base.XXXXXX")
  debian_root_unpack "$tarball" "$dir/root"
  : >"$dir/root/etc/resolv.conf"  # the engine provides its own
  tar -C "$dir/root" -cf "$dir/root.tar" .
  $engine import "$dir/root.tar" "docker.io/library/$base" >/dev/null
  rm -rf "$dir"
done

log "building $image"
t=$SECONDS
"${build[@]}" --network=host -f deploy/Dockerfile -t "$image" .
log "built in $((SECONDS - t)) s"
size=$($engine image inspect --format '{{.Size}}' "$image")
base_size=$($engine image inspect --format '{{.Size}}' debian:12-slim)
log "$image: $((size / 1000000)) MB ($(((size - base_size) / 1000000)) MB over debian:12-slim)"
healthcheck=$($engine image inspect --format '{{.Config.Healthcheck}}' "$image")
if [[ $healthcheck != *ptoctl* ]]; then
  echo "image: the HEALTHCHECK is missing ($healthcheck)" >&2
  exit 1
fi
$run || exit 0

# Runs the image's entrypoint with `flags`; sets `server` (a pid to signal
# and wait for) and `inside` (a command prefix that runs a program in the
# image, as its user).
work=$(mktemp -d "${TMPDIR:-/tmp}/ptoserve-image.XXXXXX")
container=""
cleanup() {
  [[ -n $container ]] && $engine rm -f "$container" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
metrics_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
flags=(--address=127.0.0.1:$port --metrics_address=127.0.0.1:$metrics_port --http_address=)
user=$($engine image inspect --format '{{.Config.User}}' "$image")
entrypoint=$($engine image inspect --format '{{join .Config.Entrypoint " "}}' "$image")
if $engine run --rm --network=host "$image" --version >"$work/probe" 2>&1; then
  log "running it as a container (user $user)"
  $engine run -d --network=host --name "ptoserve-image-check-$$" "$image" "${flags[@]}" >/dev/null
  container=ptoserve-image-check-$$
  inside=($engine exec "$container")
  logs() { $engine logs "$container" 2>&1; }
  stop() {  # sets rc
    $engine stop -t 10 "$container" >/dev/null
    rc=$($engine wait "$container")
  }
else
  log "this engine cannot start a container here ($(tail -n 1 "$work/probe")); chroot into its root filesystem as user $user instead"
  id=$($engine create "$image")
  container=$id
  mkdir "$work/root"
  $engine export "$id" | tar -C "$work/root" -xf -
  cp /etc/resolv.conf "$work/root/etc/resolv.conf"
  in_root() {  # runs a command in the image's root as its user
    unshare --mount --propagation private -- sh -c '
      root=$1; shift
      mount -t proc proc "$root/proc"
      mount --rbind /dev "$root/dev"
      exec chroot --userspec="$USERSPEC" "$root" "$@"' in_root "$work/root" "$@"
  }
  export USERSPEC="$user:$user"
  in_root $entrypoint "${flags[@]}" >"$work/server.log" 2>&1 &
  server_pid=$!
  inside=(in_root)
  logs() { cat "$work/server.log"; }
  stop() {  # sets rc
    pkill -TERM -f "ptoserve .*${flags[0]}" || true
    rc=0
    wait "$server_pid" || rc=$?
  }
fi

for _ in $(seq 1 100); do
  logs | grep -q "metrics on" && break
  sleep 0.1
done
logs
"${inside[@]}" ptoctl --server=127.0.0.1:$port health
got=$("${inside[@]}" ptoctl --server=127.0.0.1:$port tand --dtype=uint8 --shape=1x4 \
  --src0=0xf0,0x0f,0xff,0x00 --src1=0x3c)
echo "$got"
echo "$got" | grep -qE '^ +48 +12 +60 +0$' || { echo "image: unexpected TAND result" >&2; exit 1; }
# The uid it runs as, from the kernel.
uid=$(awk '/^Uid:/ {print $2}' "/proc/$(pgrep -f "ptoserve .*${flags[0]}" | head -n 1)/status")
[[ $uid == 10001 ]] || { echo "image: ptoserve runs as uid $uid, not 10001" >&2; exit 1; }
python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())" "http://127.0.0.1:$metrics_port/metrics" | grep -E "^ptoserve_build_info|^process_start_time_seconds"
stop
logs | tail -n 2
[[ $rc == 0 ]] || { echo "image: ptoserve exited $rc on SIGTERM" >&2; exit 1; }
log "passed in $((SECONDS - start)) s; $image is $((size / 1000000)) MB"
