"""Installs ptoserve_client as client/python/README.md tells a user to, and
uses it from outside the source tree against the real server.

From a copy of the checkout's client/python and proto/ (nothing generated
in it), offline: a venv with --system-site-packages, `pip install
--no-build-isolation --no-index` (pip's configuration and PIP_* settings
ignored, so only Debian's packages can satisfy it); then, from a directory
outside the copy and with no PYTHONPATH, one TAND against a server, checked
against numpy; then `pip uninstall` must remove the generated modules too.

Run by `bazel test //client/python:install_test`. Outside Bazel, from the
repository root after `bazel build //server:ptoserve`:
    PTOSERVE_BINARY=bazel-bin/server/ptoserve \\
    /usr/bin/python3 client/python/install_test.py
"""

import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

from server_process import start_server, stop_server

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKOUT = os.path.dirname(os.path.dirname(HERE))
# What the install needs beyond tools/setup.sh's packages' Python modules:
# (is it there?, what, Debian package).
PREREQUISITES = [
    (lambda: importlib.util.find_spec("ensurepip"), "python3 -m venv",
     "python3-venv"),
    (lambda: importlib.util.find_spec("wheel"), "the wheel module",
     "python3-wheel"),
    (lambda: shutil.which("protoc"), "protoc", "protobuf-compiler"),
    (lambda: os.path.exists("/usr/bin/grpc_python_plugin"),
     "grpc_python_plugin", "protobuf-compiler-grpc"),
    (lambda: os.path.exists("/usr/include/google/protobuf/duration.proto"),
     "google/protobuf/duration.proto", "libprotobuf-dev"),
    (lambda: os.path.exists(
        "/usr/share/grpc-proto/grpc/health/v1/health.proto"),
     "grpc/health/v1/health.proto", "grpc-proto"),
]
# Run by the installed package's Python, outside the source tree.
USE_IT = """
import importlib.metadata, json, sys
import numpy as np
import grpc_health.v1.health_pb2, ptoserve.v1.service_pb2, ptoserve_client
from ptoserve_client import Client
a = np.array(json.loads(sys.argv[2]), dtype=np.int16)
with Client(sys.argv[1], timeout=10) as client:
    result = client.tand(a, int(sys.argv[3]), target="a2a3")
    print(json.dumps({
        "dst": result.dst.tolist(), "dtype": str(result.dst.dtype),
        "health": client.health(),
        "version": importlib.metadata.version("ptoserve-client"),
        "modules": [m.__file__ for m in (
            ptoserve_client, ptoserve.v1.service_pb2,
            grpc_health.v1.health_pb2)]}))
"""


def run(args, **kwargs) -> subprocess.CompletedProcess:
    """Runs `args`; a failure shows its output."""
    done = subprocess.run(args, capture_output=True, text=True, timeout=240,
                          check=False, **kwargs)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited "
                             f"{done.returncode}:\n{done.stdout}{done.stderr}")
    return done


class InstallTest(unittest.TestCase):

    def setUp(self):
        missing = [f"{package} ({what})"
                   for present, what, package in PREREQUISITES
                   if not present()]
        if missing:
            self.fail("installing ptoserve_client needs the Debian packages "
                      f"{', '.join(missing)}: apt-get install "
                      f"{' '.join(m.split()[0] for m in missing)}")
        self.dir = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        self.addCleanup(shutil.rmtree, self.dir, ignore_errors=True)
        # A user's environment, minus anything that could reach an index
        # or import the source tree.
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("PIP_", "PYTHON"))}
        self.env.update(PIP_CONFIG_FILE=os.devnull, HOME=self.dir)

    def copy_checkout(self) -> str:
        """client/python and proto/ptoserve/v1 as a checkout has them."""
        root = os.path.join(self.dir, "checkout")
        shutil.copytree(HERE, os.path.join(root, "client", "python"),
                        ignore=shutil.ignore_patterns(
                            "build", "*.egg-info", "__pycache__"))
        protos = os.path.join(root, "proto", "ptoserve", "v1")
        os.makedirs(protos)
        for proto in glob.glob(os.path.join(CHECKOUT, "proto", "ptoserve",
                                            "v1", "*.proto")):
            shutil.copy(proto, protos)
        for generated in ("ptoserve", "grpc_health"):
            self.assertFalse(os.path.exists(
                os.path.join(root, "client", "python", generated)))
        return root

    def test_install_offline_and_tand_from_outside_the_source_tree(self):
        checkout = self.copy_checkout()
        venv = os.path.join(self.dir, "venv")
        # The README's commands, run from the checkout.
        run(["/usr/bin/python3", "-m", "venv", "--system-site-packages",
             venv], cwd=checkout, env=self.env)
        pip = os.path.join(venv, "bin", "pip")
        run([pip, "install", "--no-build-isolation", "--no-index",
             "./client/python"], cwd=checkout, env=self.env)

        server, address = start_server()
        try:
            outside = os.path.join(self.dir, "elsewhere")
            os.mkdir(outside)
            a = np.arange(64, dtype=np.int16).reshape(2, 32) * 0x0123
            mask = 0x0ff0
            done = run([os.path.join(venv, "bin", "python"), "-I", "-c",
                        USE_IT, address, json.dumps(a.tolist()), str(mask)],
                       cwd=outside, env=self.env)
        finally:
            stop_server(server)
        got = json.loads(done.stdout)
        self.assertEqual(got["dtype"], "int16")
        np.testing.assert_array_equal(np.array(got["dst"], np.int16),
                                      np.bitwise_and(a, np.int16(mask)))
        self.assertEqual(got["health"], "SERVING")
        with open(os.path.join(HERE, "ptoserve_client", "__init__.py")) as f:
            version = re.search(r'^__version__ = "(.*)"$', f.read(), re.M)[1]
        self.assertEqual(got["version"], version)
        site = os.path.realpath(venv)
        for module in got["modules"]:
            self.assertTrue(os.path.realpath(module).startswith(site + "/"),
                            f"{module} is not the venv's")

        run([pip, "uninstall", "--yes", "ptoserve-client"], env=self.env)
        left = [os.path.join(root, name)
                for root, dirs, files in os.walk(venv)
                for name in dirs + files
                if name in ("ptoserve", "grpc_health", "ptoserve_client")]
        self.assertEqual(left, [], "pip uninstall left these behind")


if __name__ == "__main__":
    unittest.main()
