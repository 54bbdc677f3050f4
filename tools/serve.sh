#!/usr/bin/env bash
# Builds ptoserve optimized, installs it, and starts it on its defaults
# (gRPC on 127.0.0.1:50051, the HTTP/JSON API and playground on
# http://127.0.0.1:8000, metrics on :9464). Flags are passed on:
# tools/serve.sh --default_target=a2a3.
#
# Installs, so that the docs' commands work whatever was built last:
#   ptoserve, ptoctl     in /usr/local/bin (as root; else ~/.local/bin)
#   ptoserve_client      the Python client with its generated modules, in
#                        /usr/bin/python3's site-packages (as root; else
#                        the user's)
# The build keeps its outputs in the disk cache tools/test.sh uses too
# (PTOSERVE_DISK_CACHE; empty turns it off).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh serve
bazel build -c opt --disk_cache="${PTOSERVE_DISK_CACHE-$HOME/.cache/ptoserve-disk-cache}" \
  //server:ptoserve //client/ptoctl //client/python:ptoserve_client
# bazel-bin is the build above's until the next build: copy out of it now.
out=$(bazel info -c opt bazel-bin 2>/dev/null)
if [[ $(id -u) == 0 ]]; then
  bin=/usr/local/bin
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
else
  bin=$HOME/.local/bin
  site=$(/usr/bin/python3 -c 'import site; print(site.getusersitepackages())')
fi
install -d "$bin" "$site"
install -m 0755 "$out/server/ptoserve" "$out/client/ptoctl/ptoctl" "$bin/"
for package in ptoserve_client ptoserve grpc_health; do
  rm -rf "${site:?}/$package"
done
cp -r client/python/ptoserve_client "$site/"
cp -r "$out/client/python/ptoserve" "$out/client/python/grpc_health" "$site/"
chmod -R u+w,a+rX "$site/ptoserve_client" "$site/ptoserve" "$site/grpc_health"
echo "serve: installed ptoserve and ptoctl in $bin, ptoserve_client in $site" >&2
case ":$PATH:" in
  *":$bin:"*) ;;
  *) echo "serve: $bin is not on PATH; add it to run ptoctl by name" >&2 ;;
esac
exec "$bin/ptoserve" "$@"
