#!/usr/bin/env bash
# Installs what ptoserve needs to build and test on Debian 12, as root.
# Idempotent: when everything is present it only checks, in well under a
# second.
#
#   tools/setup.sh [clang | build | serve | smoke]
#
# clang: also clang and its sanitizer and libFuzzer runtimes, which the
# test command's ASan+UBSan and fuzzing stages build with.
# build: only what building the server and ptoctl needs (the container
# image's build stage): no formatter, no Python, no test tools.
# serve: what tools/serve.sh needs: the build's, the Python client's
# runtime and curl (the quickstart's first requests); no test tools.
# smoke: serve's, and what the smoke stage's tests use (tools/test.sh):
# openssl, venv and wheel, python3-h2, PyYAML, the Kubernetes models and
# kubectl; not the browser, Prometheus or HAProxy (most of the download
# and of the install's time), whose tests run on the CI machine itself.
set -euo pipefail

# Debian's kubectl (package kubernetes-client, for its built-in kustomize)
# goes to a folder of ptoserve's own, unpacked, not installed: a machine
# whose /usr/bin/kubectl belongs to another package keeps it.
kubectl_dir=/opt/ptoserve/kubernetes-client
want_kubectl=1

build_packages=(
  g++ pkg-config
  bazel-bootstrap bazel-platforms bazel-rules-java
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev
  grpc-proto libabsl-dev libmicrohttpd-dev zlib1g-dev
  # The system libraries' repository (third_party/system_libs.bzl) asks
  # pkg-config for every library it names, tests' included.
  libgtest-dev libgmock-dev libbenchmark-dev
)
python_packages=(python3-grpcio python3-protobuf python3-numpy)
smoke_packages=(
  python3-yaml openssl python3-venv python3-wheel python3-h2
  python3-kubernetes
)
packages=(
  "${build_packages[@]}" "${python_packages[@]}" curl
  "${smoke_packages[@]}" clang-format
  # The playground's test drives Debian's chromium, headless.
  chromium
  # Operating it: a real Prometheus scrapes a loaded server and promtool
  # checks the alert rules (tests/deploy); HAProxy fronts three replicas
  # (deploy/haproxy). The rendered Kubernetes objects load into the
  # client library's models (python3-kubernetes, above).
  prometheus haproxy
)
for extra in "$@"; do
  case "$extra" in
    clang) packages+=(clang libclang-rt-14-dev) ;;
    build) packages=("${build_packages[@]}"); want_kubectl=0 ;;
    serve)
      packages=("${build_packages[@]}" "${python_packages[@]}" curl)
      want_kubectl=0
      ;;
    smoke)
      packages=("${build_packages[@]}" "${python_packages[@]}" curl
        "${smoke_packages[@]}")
      ;;
    *) echo "usage: tools/setup.sh [clang | build | serve | smoke]" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  if [[ $(id -u) != 0 ]]; then
    echo "setup: run as root (apt-get install needs it)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ((want_kubectl)) && [[ ! -x $kubectl_dir/usr/bin/kubectl ]]; then
  echo "setup: unpacking Debian's kubernetes-client into $kubectl_dir" >&2
  if [[ $(id -u) != 0 ]]; then
    echo "setup: run as root (it writes $kubectl_dir)" >&2
    exit 1
  fi
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  if ! (cd "$scratch" && apt-get download -qq kubernetes-client 2>/dev/null); then
    apt-get update -qq
    (cd "$scratch" && apt-get download -qq kubernetes-client)
  fi
  mkdir -p "$kubectl_dir.new"
  dpkg -x "$scratch"/kubernetes-client_*.deb "$kubectl_dir.new"
  rm -rf "$kubectl_dir"
  mv "$kubectl_dir.new" "$kubectl_dir"
fi
