"""Builds ptoserve_client together with the protobuf and gRPC modules it
imports, generated at build time (nothing generated is committed) in the
layout client/python/BUILD.bazel's genrules give them:

  ptoserve/v1/*_pb2.py, *_pb2_grpc.py  from the checkout's
                                       proto/ptoserve/v1/*.proto
  grpc_health/v1/health_pb2*.py        from Debian's grpc-proto
                                       health.proto (PyPI's
                                       grpcio-health-checking layout)

by the system protoc and grpc_python_plugin. The metadata is in
pyproject.toml; install from a checkout (client/python/README.md):

  /usr/bin/python3 -m venv --system-site-packages ~/.venvs/ptoserve
  ~/.venvs/ptoserve/bin/pip install --no-build-isolation --no-index ./client/python
"""

import importlib.util
import pathlib
import re
import shutil
import subprocess
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py

# setuptools 66 builds wheels with it: fail early, saying so.
if importlib.util.find_spec("wheel") is None:
    raise SystemExit("ptoserve_client: the wheel module is missing; on "
                     "Debian 12: apt-get install python3-wheel")

HERE = pathlib.Path(__file__).resolve().parent
# The checkout's wire contract: this file is client/python/setup.py.
PROTO_ROOT = HERE.parent.parent / "proto"
HEALTH_PROTO = pathlib.Path(
    "/usr/share/grpc-proto/grpc/health/v1/health.proto")
GRPC_PYTHON_PLUGIN = pathlib.Path("/usr/bin/grpc_python_plugin")
# protoc finds the well-known types job.proto imports (Duration,
# Timestamp) here, next to itself.
WELL_KNOWN_PROTO = pathlib.Path("/usr/include/google/protobuf/duration.proto")


def _require(path: pathlib.Path | None, what: str, package: str) -> None:
    if path is None or not path.exists():
        raise SystemExit(
            f"ptoserve_client: {what} not found ({path or 'not on PATH'}); "
            f"on Debian 12: apt-get install {package}")


def generate(out: pathlib.Path) -> None:
    """Writes the ptoserve.v1 and grpc_health.v1 modules under `out`."""
    protoc = shutil.which("protoc")
    _require(protoc and pathlib.Path(protoc), "protoc", "protobuf-compiler")
    _require(GRPC_PYTHON_PLUGIN, "grpc_python_plugin",
             "protobuf-compiler-grpc")
    _require(WELL_KNOWN_PROTO, "google/protobuf/duration.proto",
             "libprotobuf-dev")
    _require(HEALTH_PROTO, "grpc/health/v1/health.proto", "grpc-proto")
    protos = sorted(PROTO_ROOT.glob("ptoserve/v1/*.proto"))
    if not protos:
        raise SystemExit(
            f"ptoserve_client: no {PROTO_ROOT}/ptoserve/v1/*.proto: build "
            "from a ptoserve checkout (pip install ./client/python)")

    def run_protoc(proto_path: pathlib.Path,
                   files: list[pathlib.Path]) -> None:
        subprocess.run(
            [protoc, f"--python_out={out}", f"--grpc_python_out={out}",
             f"--plugin=protoc-gen-grpc_python={GRPC_PYTHON_PLUGIN}",
             f"--proto_path={proto_path}", *map(str, files)], check=True)

    run_protoc(PROTO_ROOT, protos)
    # As grpc_health/v1/health.proto, so that the generated modules are
    # grpc_health.v1.*: under grpc/ the grpc package would hide them.
    with tempfile.TemporaryDirectory() as root:
        health = pathlib.Path(root, "grpc_health", "v1", "health.proto")
        health.parent.mkdir(parents=True)
        shutil.copyfile(HEALTH_PROTO, health)
        run_protoc(pathlib.Path(root), [health])
    for package in ("ptoserve", "ptoserve/v1", "grpc_health",
                    "grpc_health/v1"):
        (out / package / "__init__.py").touch()


class BuildPyWithStubs(build_py):
    """build_py that also generates the protobuf and gRPC modules into the
    build directory, so the wheel carries them."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            raise SystemExit(
                "ptoserve_client: an editable install (pip install -e) has "
                "no generated modules; install without -e, or use the Bazel "
                "flow (client/python/README.md)")
        generate(pathlib.Path(self.build_lib))


setup(
    version=re.search(r'^__version__ = "(.+)"$',
                      (HERE / "ptoserve_client" / "__init__.py").read_text(),
                      re.MULTILINE)[1],
    packages=["ptoserve_client"],
    package_data={"ptoserve_client": ["py.typed"]},
    cmdclass={"build_py": BuildPyWithStubs},
)
