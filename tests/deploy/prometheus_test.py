"""A real Prometheus (Debian's) scrapes a server under load, with
deploy/prometheus/rules.yml loaded, and what it answers through its HTTP
API is checked against what the load generator sent:

  - the Execute calls it counts, exactly, by code, and their bytes each
    way, exactly (the generator sums the messages it sent and received);
  - rate() over a window holding the whole load, against the calls over
    the window's length;
  - histogram_quantile() of grpc_server_handling_seconds at 0.5 and 0.99:
    no call takes longer on the server than at its client, so each lies at
    most at the upper bound of the bucket that holds the generator's own
    quantile;
  - the memory budget gauge, against --memory_budget_mb, and the recording
    rule over it; every rule evaluated without error;
  - `promtool check metrics` on a scrape, and a gzipped one;
  - every query of the Grafana dashboard, its variables filled in as
    Grafana would, returns data.

Usage: prometheus_test.py RULES_FILE DASHBOARD_FILE (with PTOSERVE_BINARY
set)."""

import bisect
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

import grpc
import numpy as np
from ptoserve_client import binary_job
from server_process import free_port, start_and_read, stop_server, wait_for

RULES = os.path.abspath(sys.argv.pop(1))
DASHBOARD = os.path.abspath(sys.argv.pop(1))
PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"
BUDGET_MB = 96
# Every wait below is bounded by this.
WAIT_S = 60
LOAD_S = 6
THREADS = 4
BAD_CALLS = 25
SCRAPE_S = 1
EXECUTE = '{grpc_service="ptoserve.v1.TileCompute",grpc_method="Execute"'
# grpc_server_handling_seconds' bucket bounds (server/metrics/grpc_metrics.cc).
BOUNDS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
          0.1, 0.25, 0.5, 1, 2.5, 5, 10]


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bucket_bound(seconds: float) -> float:
    """The upper bound of the histogram bucket that holds `seconds`."""
    i = bisect.bisect_left(BOUNDS, seconds)
    return BOUNDS[i] if i < len(BOUNDS) else float("inf")


class Load:
    """Execute calls from THREADS threads for LOAD_S seconds, each a 16x16
    int32 TAND sent as bytes, and BAD_CALLS calls whose target is a2a3 with
    rows that are too narrow (INVALID_ARGUMENT); counts and times them."""

    def __init__(self, address: str, http: str):
        self.http = http
        a = np.full((16, 16), 0x0FF0, np.int32)
        b = np.full((16, 16), 0x00FF, np.int32)
        self.request = binary_job("tand", a, b).SerializeToString()
        narrow = np.ones((16, 8), np.int16)
        self.bad = binary_job("txor", narrow, narrow,
                              target="a2a3").SerializeToString()
        self.channel = grpc.insecure_channel(address)
        self.execute = self.channel.unary_unary(
            "/ptoserve.v1.TileCompute/Execute")
        self.lock = threading.Lock()
        self.ok = 0
        self.invalid = 0
        self.other = []
        self.sent_bytes = 0
        self.received_bytes = 0
        self.latencies: list[float] = []

    def run(self) -> None:
        stop = time.monotonic() + LOAD_S
        threads = [threading.Thread(target=self._calls, args=(stop,))
                   for _ in range(THREADS)]
        for t in threads:
            t.start()
        for _ in range(BAD_CALLS):
            try:
                self.execute(self.bad, timeout=30)
                self.other.append("a2a3 job with narrow rows answered OK")
            except grpc.RpcError as error:
                with self.lock:
                    if error.code() == grpc.StatusCode.INVALID_ARGUMENT:
                        self.invalid += 1
                        self.sent_bytes += len(self.bad)
                    else:
                        self.other.append(f"{error.code()}: {error.details()}")
        self._http_calls(stop)
        for t in threads:
            t.join()
        self.channel.close()

    def _http_calls(self, stop: float) -> None:
        """HTTP requests, three routes, until `stop`: counters that grow
        from one scrape to the next for the dashboard's HTTP panels."""
        while time.monotonic() < stop:
            for path in ["/v2/health/ready", "/v1/capabilities", "/nowhere"]:
                try:
                    with urllib.request.urlopen(self.http + path, timeout=30):
                        pass
                except urllib.error.HTTPError as error:
                    if error.code != 404:
                        self.other.append(f"{path}: HTTP {error.code}")

    def _calls(self, stop: float) -> None:
        while time.monotonic() < stop:
            start = time.perf_counter()
            try:
                reply = self.execute(self.request, timeout=30)
            except grpc.RpcError as error:
                with self.lock:
                    self.other.append(f"{error.code()}: {error.details()}")
                continue
            took = time.perf_counter() - start
            with self.lock:
                self.ok += 1
                self.sent_bytes += len(self.request)
                self.received_bytes += len(reply)
                self.latencies.append(took)


class PrometheusTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.server, found = start_and_read(
            ["--address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
             "--http_address=127.0.0.1:0", f"--memory_budget_mb={BUDGET_MB}",
             "--max_job_mb=64"],
            {"address": "listening on ", "metrics": "metrics on ",
             "http": "HTTP/JSON API on "})
        cls.address, cls.metrics_url = found["address"], found["metrics"]
        cls.scratch = tempfile.mkdtemp()
        target = urllib.parse.urlparse(cls.metrics_url).netloc
        config = os.path.join(cls.scratch, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"""global:
  scrape_interval: {SCRAPE_S}s
  evaluation_interval: {SCRAPE_S}s
rule_files: [{json.dumps(RULES)}]
scrape_configs:
  - job_name: ptoserve
    static_configs:
      - targets: [{json.dumps(target)}]
""")
        cls.prometheus = None
        for _ in range(3):  # a port taken between free_port and bind
            port = free_port()
            cls.api = f"http://127.0.0.1:{port}"
            cls.prometheus = subprocess.Popen(
                [PROMETHEUS, f"--config.file={config}",
                 f"--storage.tsdb.path={cls.scratch}/data",
                 f"--web.listen-address=127.0.0.1:{port}",
                 "--log.level=warn"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                wait_for("Prometheus ready", cls.ready)
                break
            except AssertionError:
                cls.prometheus.kill()
                cls.prometheus.wait()
                cls.prometheus = None
        if cls.prometheus is None:
            stop_server(cls.server)
            raise AssertionError("Prometheus did not start")
        try:
            # Three scrapes of the idle server before the load: the windows
            # below start on samples taken before it.
            wait_for("three scrapes", lambda: cls.value(
                'count_over_time(up{job="ptoserve"}[1m]) >= 3'))
            cls.load_start = time.time()
            cls.load = Load(cls.address, found["http"])
            cls.load.run()
            cls.load_end = time.time()
            # Prometheus has the last count once a scrape after the load.
            total = cls.load.ok
            wait_for(f"Prometheus to count {total} calls", lambda: cls.value(
                f'grpc_server_handled_total{EXECUTE},grpc_code="OK"}} == {total}'))
            cls.last_scrape = time.time()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.prometheus is not None:
            cls.prometheus.terminate()
            cls.prometheus.wait(timeout=WAIT_S)
            cls.prometheus = None
        if cls.server is not None:
            stop_server(cls.server)
            cls.server = None
        shutil.rmtree(cls.scratch, ignore_errors=True)

    @classmethod
    def ready(cls) -> bool:
        try:
            with urllib.request.urlopen(cls.api + "/-/ready", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    @classmethod
    def get(cls, path: str, **params) -> dict:
        url = f"{cls.api}{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as answer:
            body = json.load(answer)
        if body.get("status") != "success":
            raise AssertionError(f"{url}: {body}")
        return body["data"]

    @classmethod
    def query(cls, expr: str, at: float | None = None) -> list:
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        return cls.get("/api/v1/query", **params)["result"]

    @classmethod
    def value(cls, expr: str, at: float | None = None) -> float | None:
        """The value of an expression with one sample (None: no sample)."""
        result = cls.query(expr, at)
        if not result:
            return None
        if len(result) != 1:
            raise AssertionError(f"{expr}: {len(result)} samples: {result}")
        return float(result[0]["value"][1])

    def test_the_generator_is_what_prometheus_counted(self):
        load = self.load
        self.assertEqual(load.other, [])
        self.assertGreater(load.ok, 100)
        self.assertEqual(load.invalid, BAD_CALLS)
        print(f"generator: {load.ok} OK and {load.invalid} INVALID_ARGUMENT "
              f"calls in {self.load_end - self.load_start:.1f} s")
        self.assertEqual(self.value(
            f'grpc_server_handled_total{EXECUTE},grpc_code="OK"}}'), load.ok)
        self.assertEqual(self.value(
            f'grpc_server_handled_total{EXECUTE},grpc_code="INVALID_ARGUMENT"}}'),
            BAD_CALLS)
        self.assertEqual(self.value(
            f"grpc_server_msg_received_bytes_total{EXECUTE}}}"), load.sent_bytes)
        self.assertEqual(self.value(
            f"grpc_server_msg_sent_bytes_total{EXECUTE}}}"), load.received_bytes)
        self.assertEqual(self.value(
            'sum(ptoserve_jobs_total{target="host",code="OK"})'), load.ok)

    def test_rate_over_the_load(self):
        # A window from before the load to now: Prometheus's rate is the
        # calls over its length, extrapolated at most a scrape interval at
        # each end (the counter is flat there).
        now = time.time()
        window = int(now - self.load_start) + 3
        rate = self.value(
            f'sum(rate(grpc_server_handled_total{EXECUTE},grpc_code="OK"}}'
            f'[{window}s]))', at=now)
        expected = self.load.ok / window
        print(f"rate over {window} s: Prometheus {rate:.1f}/s, generator "
              f"{expected:.1f}/s")
        self.assertGreaterEqual(rate, expected * 0.97)
        # At most 1.1 intervals at each end (Prometheus's extrapolation).
        self.assertLessEqual(rate, expected * window / (window - 2.5 * SCRAPE_S))

    def test_quantiles_agree_with_the_generator(self):
        now = time.time()
        window = int(now - self.load_start) + 3
        for q in (0.5, 0.99):
            server = self.value(
                f'histogram_quantile({q}, sum by (le) (rate('
                f'grpc_server_handling_seconds_bucket{EXECUTE},grpc_code="OK"}}'
                f'[{window}s])))', at=now)
            client = quantile(self.load.latencies, q)
            print(f"p{q * 100:g}: Prometheus {server * 1e3:.3f} ms on the "
                  f"server, generator {client * 1e3:.3f} ms at the client")
            self.assertGreater(server, 0)
            self.assertLessEqual(server, bucket_bound(client))

    def test_budget_gauge_and_rules(self):
        self.assertEqual(self.value("ptoserve_memory_budget_bytes"),
                         BUDGET_MB << 20)
        self.assertEqual(self.value("ptoserve_memory_held_bytes"), 0)
        self.assertEqual(self.value("ptoserve_serving"), 1)
        # The recording rules ran on the scraped series: the ratio, once
        # evaluated on a scrape after the load, is the gauges' 0.
        wait_for("the budget's recording rule to read 0", lambda: self.value(
            "ptoserve:memory_budget_used:ratio == 0") == 0)
        wait_for("the error ratio's recording rule",
                 lambda: self.query("ptoserve:grpc_server_error_ratio:rate5m"))
        self.assertEqual(
            self.value("ptoserve:grpc_server_error_ratio:rate5m"), 0)
        groups = self.get("/api/v1/rules")["groups"]
        self.assertEqual({g["name"] for g in groups},
                         {"ptoserve.recording", "ptoserve.alerts"})
        for group in groups:
            for rule in group["rules"]:
                self.assertEqual(rule["health"], "ok", rule)
                if rule["type"] == "alerting":
                    self.assertEqual(rule["state"], "inactive", rule)

    def test_promtool_checks_the_scrape(self):
        with urllib.request.urlopen(self.metrics_url, timeout=10) as answer:
            text = answer.read()
        checked = subprocess.run([PROMTOOL, "check", "metrics"], input=text,
                                 capture_output=True, timeout=WAIT_S)
        self.assertEqual(checked.returncode, 0,
                         checked.stdout.decode() + checked.stderr.decode())
        self.assertEqual(checked.stdout.decode() + checked.stderr.decode(), "")

    def fetch(self, accept_encoding: str | None) -> tuple[dict, bytes]:
        request = urllib.request.Request(self.metrics_url)
        if accept_encoding is not None:
            request.add_header("Accept-Encoding", accept_encoding)
        with urllib.request.urlopen(request, timeout=10) as answer:
            return dict(answer.headers), answer.read()

    def test_a_scrape_that_takes_gzip_gets_it(self):
        # Prometheus sends "Accept-Encoding: gzip"; the scrapes above were
        # gzipped (up == 1 needs a body it could read).
        headers, zipped = self.fetch("gzip")
        self.assertEqual(headers.get("Content-Encoding"), "gzip")
        self.assertEqual(headers.get("Vary"), "Accept-Encoding")
        text = gzip.decompress(zipped).decode()
        self.assertIn("# TYPE grpc_server_handled_total counter", text)
        self.assertLess(len(zipped) * 4, len(text))
        # The same families as a plain scrape, in the same order.
        _, plain = self.fetch(None)
        families = lambda t: [line for line in t.splitlines()
                              if line.startswith("# TYPE")]
        self.assertEqual(families(text), families(plain.decode()))
        for refused in ["identity", "gzip;q=0", "br, deflate", "gzip;q=0.0"]:
            headers, body = self.fetch(refused)
            self.assertNotIn("Content-Encoding", headers, refused)
            self.assertIn(b"# TYPE", body, refused)
        for taken in ["deflate, gzip;q=0.5", " GZIP ", "gzip;q=1"]:
            headers, _ = self.fetch(taken)
            self.assertEqual(headers.get("Content-Encoding"), "gzip", taken)

    def test_every_dashboard_query_returns_data(self):
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        variables = {v["name"]: v for v in dashboard["templating"]["list"]}
        self.assertEqual(variables["job"]["query"]["query"],
                         "label_values(ptoserve_build_info, job)")
        jobs = self.query("group by (job) (ptoserve_build_info)")
        self.assertEqual([j["metric"]["job"] for j in jobs], ["ptoserve"])
        panels = [p for p in dashboard["panels"] if p["type"] != "row"]
        self.assertGreaterEqual(len(panels), 20)
        ids = [p["id"] for p in dashboard["panels"]]
        self.assertEqual(len(ids), len(set(ids)))
        # Grafana's $__rate_interval is at least four scrape intervals; 1m
        # holds the load and its last scrape.
        filled = {"$job": variables["job"]["allValue"],
                  "$__rate_interval": "1m"}
        for panel in panels:
            self.assertEqual(panel["datasource"]["uid"], "${datasource}",
                             panel["title"])
            self.assertTrue(panel["description"], panel["title"])
            self.assertTrue(panel["targets"], panel["title"])
            for target in panel["targets"]:
                expr = target["expr"]
                self.assertIn('job=~"$job"', expr, panel["title"])
                for name, value in filled.items():
                    expr = expr.replace(name, value)
                self.assertNotIn("$", expr, panel["title"])
                # At the last scrape of the load, every series the panel
                # draws has a value.
                result = self.query(expr, at=self.last_scrape)
                self.assertTrue(result, f"{panel['title']}: {expr}: no data")
                for series in result:
                    value = float(series["value"][1])
                    self.assertFalse(value != value,  # NaN: 0/0, no calls
                                     f"{panel['title']}: {expr}: NaN")


if __name__ == "__main__":
    unittest.main(verbosity=2)
