"""Checks deploy/ against the server it deploys.

No container engine runs where the tests do, so this reads every manifest
and the Dockerfile and checks what can go stale: that every flag they pass
exists, that ports, probes and services agree with the flags, and that a pod
is given longer to stop than the server takes to drain.

Usage: manifests_test.py PTOSERVE_BINARY DEPLOY_DIR
"""
import re
import subprocess
import sys
import unittest
from pathlib import Path

import yaml

PTOSERVE = sys.argv[1]
DEPLOY = Path(sys.argv[2])


def server_flags():
    """{flag: default} from `ptoserve --helpfull`."""
    out = subprocess.run([PTOSERVE, "--helpfull"], capture_output=True, text=True).stdout
    flags = {}
    for name, default in re.findall(r"--(\w+) \(.*?\);\s+default: (.*?);\n", out, re.S):
        flags[name] = default.strip('"')
    return flags


def parse_args(args):
    """["--a=1", "--b=x"] -> {"a": "1", "b": "x"}."""
    parsed = {}
    for arg in args:
        assert arg.startswith("--") and "=" in arg, f"not --flag=value: {arg}"
        name, value = arg[2:].split("=", 1)
        parsed[name] = value
    return parsed


def port_of(address):
    return int(address.rsplit(":", 1)[1])


def seconds(duration):
    """Abseil durations as flags write them: 250ms, 5s, 1m."""
    total = 0.0
    for number, unit in re.findall(r"([\d.]+)(ms|us|ns|s|m|h)", duration):
        total += float(number) * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1, "m": 60,
                                  "h": 3600}[unit]
    return total


class ManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.flags = server_flags()
        cls.docs = {}
        for path in sorted((DEPLOY / "k8s" / "base").glob("*.yaml")):
            for doc in yaml.safe_load_all(path.read_text()):
                cls.docs[doc["kind"]] = doc
        deployment = cls.docs["Deployment"]
        cls.pod = deployment["spec"]["template"]["spec"]
        cls.container = cls.pod["containers"][0]
        cls.args = parse_args(cls.container["args"])

    def test_the_help_lists_the_flags_this_test_relies_on(self):
        for flag in ("address", "metrics_address", "http_address", "lame_duck",
                     "shutdown_grace"):
            self.assertIn(flag, self.flags)

    def test_every_kind_is_there(self):
        for kind in ("Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"):
            self.assertIn(kind, self.docs)

    def test_container_flags_exist(self):
        for name in self.args:
            self.assertIn(name, self.flags, f"--{name} is not a ptoserve flag")

    def test_ports_agree_with_the_flags(self):
        ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}
        self.assertEqual(ports["grpc"], port_of(self.args["address"]))
        self.assertEqual(ports["metrics"], port_of(self.args["metrics_address"]))
        self.assertEqual(ports["http"], port_of(self.args["http_address"]))
        self.assertTrue(self.args["address"].startswith("0.0.0.0:"),
                        "in a pod the server must listen beyond loopback")

    def test_probes_ask_the_grpc_health_service(self):
        grpc_port = port_of(self.args["address"])
        for probe in ("readinessProbe", "livenessProbe"):
            self.assertEqual(self.container[probe]["grpc"]["port"], grpc_port, probe)

    def test_resources_are_bounded(self):
        resources = self.container["resources"]
        self.assertIn("cpu", resources["requests"])
        self.assertIn("memory", resources["limits"])

    def test_termination_outlasts_the_drain(self):
        drain = seconds(self.args.get("lame_duck", self.flags["lame_duck"])) + \
            seconds(self.args.get("shutdown_grace", self.flags["shutdown_grace"]))
        self.assertGreater(self.pod["terminationGracePeriodSeconds"], drain)

    def test_service_is_headless_and_targets_the_named_ports(self):
        service = self.docs["Service"]["spec"]
        self.assertEqual(service["clusterIP"], "None")
        names = {p["name"] for p in self.container["ports"]}
        for port in service["ports"]:
            self.assertIn(port["targetPort"], names)
        self.assertEqual(service["selector"],
                         self.docs["Deployment"]["spec"]["selector"]["matchLabels"])

    def test_budget_and_autoscaler_point_at_the_deployment(self):
        labels = self.docs["Deployment"]["spec"]["selector"]["matchLabels"]
        self.assertEqual(self.docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
                         labels)
        target = self.docs["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
        self.assertEqual(target["kind"], "Deployment")
        self.assertEqual(target["name"], self.docs["Deployment"]["metadata"]["name"])
        self.assertGreaterEqual(self.docs["HorizontalPodAutoscaler"]["spec"]["minReplicas"],
                                self.docs["Deployment"]["spec"]["replicas"])

    def test_pod_runs_as_non_root(self):
        self.assertTrue(self.pod["securityContext"]["runAsNonRoot"])
        self.assertNotEqual(self.pod["securityContext"]["runAsUser"], 0)

    def test_dockerfile_agrees(self):
        text = (DEPLOY / "Dockerfile").read_text()
        self.assertIn("RUN tools/setup.sh", text)
        # The build README's serve command runs (its optional disk cache
        # aside): optimized, the server and ptoctl.
        build = re.search(r"^RUN bazel build (.*?)\\\n &&", text, re.M | re.S).group(1)
        words = re.sub(r"\$\([^)]*\)", " ", build).replace("\\\n", " ").split()
        self.assertEqual(words, ["-c", "opt", "//server:ptoserve", "//client:ptoctl"])
        entry = re.search(r"^ENTRYPOINT (\[.*\])", text, re.M).group(1)
        entry_args = parse_args(yaml.safe_load(entry)[1:])
        for name in entry_args:
            self.assertIn(name, self.flags)
        exposed = {int(p) for p in re.search(r"^EXPOSE (.*)$", text, re.M).group(1).split()}
        self.assertEqual(exposed, {port_of(entry_args["address"]),
                                   port_of(entry_args["metrics_address"]),
                                   port_of(entry_args["http_address"])})
        self.assertRegex(text, r"(?m)^USER 10001$")
        self.assertRegex(text, r"HEALTHCHECK[\s\S]*ptoctl.*health")
        self.assertIn(f"--server=127.0.0.1:{port_of(entry_args['address'])}", text)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
