"""The call's deadline, by the server's own clock: a raw HTTP/2 client
sends a job with grpc-timeout and never cancels it (a gRPC client cancels
at its own deadline, which may reach a loaded server before the server's
clock says the deadline passed, and the job is then rightly counted
CANCELLED). The job waits for company in the queue
(--max_queue_delay_us=1000000); the server must drop it at its deadline,
count it DEADLINE_EXCEEDED and never run it."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raw_grpc  # noqa: E402
from ptoserve.v1 import job_pb2, tile_pb2  # noqa: E402
from server_process import (  # noqa: E402
    scrape, start_server_with_metrics, stop_server)

WAIT_S = 30
EXECUTE = "/ptoserve.v1.TileCompute/Execute"
DEADLINE_EXCEEDED, OK = "4", "0"
DROPPED = 'ptoserve_jobs_total{target="host",code="DEADLINE_EXCEEDED"}'
RAN = 'ptoserve_queue_time_seconds_count{opcode="TAND",target="host"}'


def tand_job():
    job = job_pb2.Job(target=job_pb2.TARGET_HOST)
    for name, values in (("a", [1, 2, 3, 4]), ("b", [3, 3, 3, 3])):
        job.tiles[name].CopyFrom(tile_pb2.Tile(
            dtype=tile_pb2.DTYPE_INT32, rows=2, cols=2, values=values))
    job.instructions.add(opcode=job_pb2.OPCODE_TAND, dst="c", src0="a",
                         src1="b")
    return raw_grpc.frame(job.SerializeToString())


class DeadlineTest(unittest.TestCase):

    def setUp(self):
        self.server, self.address, self.metrics = start_server_with_metrics(
            "--max_queue_delay_us=1000000")

    def tearDown(self):
        stop_server(self.server)

    def jobs(self):
        """Every job the server has answered, by code."""
        return {k: v for k, v in scrape(self.metrics).items()
                if k.startswith("ptoserve_jobs_total{")}

    def test_the_servers_clock_drops_a_queued_job(self):
        connection = raw_grpc.Connection(self.address)
        try:
            # Not half-closed: gRPC resets the stream after its trailers,
            # which h2 refuses on a stream closed both ways.
            answer = connection.call(EXECUTE, tand_job(),
                                     [("grpc-timeout", "100m")],
                                     end_stream=False)
            self.assertEqual(answer.status, DEADLINE_EXCEEDED, answer)
            # The answer may come from gRPC's own timer a moment before the
            # server's queue lets the job go: wait for both.
            deadline = time.monotonic() + WAIT_S
            while time.monotonic() < deadline:
                metrics = scrape(self.metrics)
                if (metrics.get(DROPPED, 0) >= 1
                        and metrics.get("ptoserve_jobs_in_flight") == 0):
                    break
                time.sleep(0.02)
            # Counted once, as its deadline: not cancelled, not run.
            self.assertEqual(self.jobs(), {DROPPED: 1}, self.jobs())
            self.assertEqual(scrape(self.metrics).get(RAN, 0), 0)
            # The server goes on: the same job without a deadline waits out
            # its second for company and is answered.
            answer = connection.call(EXECUTE, tand_job())
            self.assertEqual(answer.status, OK, answer)
        finally:
            connection.close()


if __name__ == "__main__":
    unittest.main()
