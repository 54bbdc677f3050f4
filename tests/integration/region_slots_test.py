"""One user's shared-memory regions never refuse another's: each user may
have --max_shared_regions_per_user of the server's --max_shared_regions
(docs/SECURITY.md, "What one client may take"), List names each region's
user and registration time, and a region leased to its connection goes
--shared_region_grace after that connection closes. The other user is
nobody, run from here as root does in client_test."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
from ptoserve.v1 import service_pb2, service_pb2_grpc
from server_process import start_server, stop_server

CALL_TIMEOUT_S = 30
NOBODY = 65534

# Run as nobody: makes objects of its own and registers them (as TAG-i,
# outliving the connection if OUTLIVE is 1) until the server refuses one;
# prints how many it registered and the refusal, and exits, closing its
# connection.
NOBODY_SCRIPT = r"""
import json, os, sys
import grpc
from ptoserve.v1 import service_pb2, service_pb2_grpc
address, prefix, tries = sys.argv[1], sys.argv[2], int(sys.argv[3])
tag, outlive = sys.argv[4], sys.argv[5] == "1"
registered, refusal = 0, None
with grpc.insecure_channel(address) as channel:
    shared = service_pb2_grpc.SharedMemoryStub(channel)
    for i in range(tries):
        key = f"{prefix}-{tag}-{i}"
        fd = os.open("/dev/shm" + key, os.O_CREAT | os.O_RDWR, 0o600)
        os.write(fd, b"x")
        os.close(fd)
        try:
            shared.Register(service_pb2.RegisterRequest(
                name=f"{tag}-{i}", key=key, size=1,
                outlive_connection=outlive), timeout=10)
            registered += 1
        except grpc.RpcError as e:
            refusal = [e.code().name, e.details()]
            os.unlink("/dev/shm" + key)
            break
print(json.dumps({"registered": registered, "refusal": refusal}))
"""


class AsNobody:
    """A server with shared memory on, and clients run as nobody."""

    SERVER_FLAGS = ()

    def setUp(self):
        self.server, self.address = start_server(
            "--shared_memory=true", *self.SERVER_FLAGS)
        self.prefix = f"/ptoserve-slots-{os.getpid()}"
        self.addCleanup(self.remove_objects)

    def tearDown(self):
        stop_server(self.server)

    def remove_objects(self):
        for name in os.listdir("/dev/shm"):
            if name.startswith(self.prefix[1:]):
                os.unlink("/dev/shm/" + name)

    def run_as_nobody(self, tries, tag="nobody", outlive=True):
        # The generated code, where nobody can read it.
        with tempfile.TemporaryDirectory(dir="/tmp") as path:
            import ptoserve
            source = os.path.dirname(ptoserve.__file__)
            shutil.copytree(source, os.path.join(path, "ptoserve"))
            for root, dirs, files in os.walk(path):
                for name in dirs + files:
                    os.chmod(os.path.join(root, name), 0o755)
            os.chmod(path, 0o755)
            run = subprocess.run(
                [sys.executable, "-c", NOBODY_SCRIPT, self.address,
                 self.prefix + "-nobody", str(tries), tag,
                 "1" if outlive else "0"],
                cwd=path, env={"PYTHONPATH": path, "PATH": "/usr/bin:/bin"},
                user=NOBODY, group=NOBODY, extra_groups=[],
                capture_output=True, text=True, timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        return json.loads(run.stdout)

    def register(self, shared, name):
        key = f"{self.prefix}-root-{name}"
        with open("/dev/shm" + key, "wb") as f:
            f.write(b"y")
        return shared.Register(service_pb2.RegisterRequest(
            name=name, key=key, size=1), timeout=CALL_TIMEOUT_S)

    def list(self, shared):
        return {region.name: region for region in shared.List(
            service_pb2.ListRequest(), timeout=CALL_TIMEOUT_S).regions}


@unittest.skipUnless(os.geteuid() == 0, "needs root, to run a client as "
                     "another user")
class RegionSlotsTest(AsNobody, unittest.TestCase):

    # Nobody's regions outlive its client (run_as_nobody's default).
    SERVER_FLAGS = ("--max_shared_regions=8",)

    def test_one_user_takes_at_most_its_share_of_the_slots(self):
        started = time.time()
        # A quarter of 8 each, by default.
        out = self.run_as_nobody(tries=8)
        self.assertEqual(out["registered"], 2, out)
        code, message = out["refusal"]
        self.assertEqual(code, "RESOURCE_EXHAUSTED")
        self.assertIn("user 65534 has 2 regions registered, the most one "
                      "user may (--max_shared_regions_per_user)", message)
        with grpc.insecure_channel(self.address) as channel:
            shared = service_pb2_grpc.SharedMemoryStub(channel)
            compute = service_pb2_grpc.TileComputeStub(channel)
            capabilities = compute.GetCapabilities(
                service_pb2.GetCapabilitiesRequest(), timeout=CALL_TIMEOUT_S)
            self.assertEqual(capabilities.shared_memory.max_regions, 8)
            self.assertEqual(
                capabilities.shared_memory.max_regions_per_user, 2)
            # Root's own regions are not refused for nobody's.
            self.register(shared, "root-0")
            self.register(shared, "root-1")
            with self.assertRaises(grpc.RpcError) as refused:
                self.register(shared, "root-2")
            self.assertEqual(refused.exception.code(),
                             grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("user 0 has 2 regions", refused.exception.details())
            listed = shared.List(service_pb2.ListRequest(),
                                 timeout=CALL_TIMEOUT_S).regions
            users = {region.name: region.registered_by_uid
                     for region in listed}
            self.assertEqual(users, {"nobody-0": NOBODY, "nobody-1": NOBODY,
                                     "root-0": 0, "root-1": 0})
            for region in listed:
                at = (region.registered_at.seconds
                      + region.registered_at.nanos / 1e9)
                self.assertGreaterEqual(at, started - 1, region.name)
                self.assertLessEqual(at, time.time() + 1, region.name)
            # A slot given back is a slot to take again.
            shared.Unregister(service_pb2.UnregisterRequest(name="root-0"),
                              timeout=CALL_TIMEOUT_S)
            self.register(shared, "root-2")


@unittest.skipUnless(os.geteuid() == 0, "needs root, to run a client as "
                     "another user")
class RegionLeaseTest(AsNobody, unittest.TestCase):

    SERVER_FLAGS = ("--shared_region_grace=1s",)

    def test_a_region_goes_a_grace_after_its_connection(self):
        with grpc.insecure_channel(self.address) as channel:
            shared = service_pb2_grpc.SharedMemoryStub(channel)
            compute = service_pb2_grpc.TileComputeStub(channel)
            grace = compute.GetCapabilities(
                service_pb2.GetCapabilitiesRequest(),
                timeout=CALL_TIMEOUT_S).shared_memory.lease_grace
            self.assertEqual((grace.seconds, grace.nanos), (1, 0))
            # Root's region, leased to this channel's connection, open
            # throughout.
            self.register(shared, "root-open")
            # Nobody's: one leased to its connection, one that outlives it;
            # its process has exited, closing the connection.
            leased = self.run_as_nobody(tries=1, tag="leased", outlive=False)
            kept = self.run_as_nobody(tries=1, tag="kept", outlive=True)
            self.assertEqual(leased["registered"], 1, leased)
            self.assertEqual(kept["registered"], 1, kept)
            closed_at = time.monotonic()
            # Gone within the grace and a sweep (a quarter of it), with
            # room for a loaded machine: waited for, at most 30 s.
            regions = self.list(shared)
            while "leased-0" in regions and time.monotonic() - closed_at < 30:
                time.sleep(0.05)
                regions = self.list(shared)
            self.assertNotIn("leased-0", regions)
            self.assertEqual(set(regions), {"kept-0", "root-open"})
            self.assertTrue(regions["kept-0"].outlives_connection)
            self.assertEqual(regions["kept-0"].registered_by_uid, NOBODY)
            self.assertFalse(regions["root-open"].outlives_connection)
            self.assertFalse(regions["root-open"].connection_closed)
            # Its name is free again: root may take it.
            self.register(shared, "leased-0")


if __name__ == "__main__":
    unittest.main()
