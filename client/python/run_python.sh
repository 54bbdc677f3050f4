#!/bin/sh
# Runs a Python file of this package from a Bazel runfiles tree with
# Debian's Python (the one with python3-grpcio, -protobuf and -numpy), the
# client package and its generated code importable.
set -eu
export PYTHONPATH="$PWD/client/python"
export PYTHONDONTWRITEBYTECODE=1
exec /usr/bin/python3 "$@"
