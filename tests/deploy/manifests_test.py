"""Checks deploy/ against the server it deploys.

No cluster and no container engine run where the tests do. So this renders
the Kubernetes kustomizations (deploy/k8s/base and its overlays) with the
kubectl that tools/setup.sh unpacks, loads what they render (what `kubectl
apply -k` would send) into the Kubernetes client library's models, and
checks what can go stale: that every flag exists, that ports, probes and
services agree with the flags, that the memory limit leaves room beyond
--memory_budget_mb, that a pod is given longer to stop than the server takes
to drain, that the Prometheus Operator's objects scrape the metrics port and
carry deploy/prometheus/rules.yml's rules. It reads the Dockerfile likewise,
and runs its HEALTHCHECK against a server started as its ENTRYPOINT starts
one.

Usage: manifests_test.py PTOSERVE_BINARY PTOCTL_BINARY DEPLOY_DIR
"""
import difflib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

import yaml

try:
    import kubernetes.client
    from kubernetes.utils import parse_quantity
except ImportError as e:
    sys.exit(f"manifests_test: python3-kubernetes is missing ({e}); tools/setup.sh installs it")

PTOSERVE = os.path.abspath(sys.argv[1])
PTOCTL = os.path.abspath(sys.argv[2])
DEPLOY = Path(sys.argv[3])
# Debian's kubernetes-client, unpacked (not installed) by tools/setup.sh.
KUBECTL = "/opt/ptoserve/kubernetes-client/usr/bin/kubectl"
BASE = "base"
OVERLAY = "overlays/prometheus-operator"
RULES = DEPLOY / "prometheus" / "rules.yml"
PROBES = ("readinessProbe", "livenessProbe", "startupProbe")


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


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- Rendering -------------------------------------------------------------

def render(scratch, kustomization):
    """The objects `kubectl kustomize` renders from deploy/k8s/KUSTOMIZATION.

    Rendered from a copy: Bazel's runfiles are symbolic links, and the
    kustomize in kubectl 1.20 finds no kustomization.yaml that is one.
    """
    result = subprocess.run([KUBECTL, "kustomize", str(scratch / kustomization)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"kubectl kustomize deploy/k8s/{kustomization} failed "
                             f"({result.returncode}):\n{result.stderr}")
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc is not None]


# --- Loading into the client library's models -------------------------------

def model_name(obj):
    """The client library's model for a core object's apiVersion and kind."""
    version = obj["apiVersion"].split("/")[-1]
    name = version[0].upper() + version[1:] + obj["kind"]
    if obj["apiVersion"] == "autoscaling/v2" and not hasattr(kubernetes.client, name):
        # Kubernetes 1.23 made autoscaling/v2beta2 GA as autoscaling/v2 with
        # the same schema; python3-kubernetes 22.6.0 (Kubernetes 1.22) has
        # models up to v2beta2 only, so the HPA is checked against those.
        name = "V2beta2" + obj["kind"]
    return name


def probe_has_grpc():
    return "grpc" in kubernetes.client.V1Probe.attribute_map.values()


class _Response:
    """What ApiClient.deserialize reads: a body in .data."""

    def __init__(self, obj):
        self.data = json.dumps(obj)


def newer_than_the_models(path, value):
    """Whether a field the models drop is one newer than them, and right.

    python3-kubernetes 22.6.0's models are Kubernetes 1.22's. Probe.grpc
    came in 1.23 (alpha) and is on by default from 1.24 (the minimum
    docs/DEPLOYING.md names): GRPCAction is {port, service}, checked here by hand.
    """
    if len(path) < 2 or path[-1] != "grpc" or path[-2] not in PROBES or probe_has_grpc():
        return False
    return (isinstance(value, dict) and not set(value) - {"port", "service"}
            and isinstance(value.get("port"), int) and 0 < value["port"] < 65536
            and isinstance(value.get("service", ""), str))


def differences(written, kept, path=()):
    """Where `kept` (the models' round trip) lost or changed `written`."""
    where = ".".join(str(p) for p in path) or "(top)"
    if isinstance(written, dict) and isinstance(kept, dict):
        found = []
        for key, value in written.items():
            if key not in kept:
                if not newer_than_the_models(path + (key,), value):
                    found.append(f"{'.'.join(str(p) for p in path + (key,))}: "
                                 "not a field of the model")
            else:
                found += differences(value, kept[key], path + (key,))
        for key in kept.keys() - written.keys():
            found.append(f"{where}.{key}: added by the model")
        return found
    if isinstance(written, list) and isinstance(kept, list) and len(written) == len(kept):
        found = []
        for i, (a, b) in enumerate(zip(written, kept)):
            found += differences(a, b, path + (i,))
        return found
    if written != kept or type(written) is not type(kept):
        return [f"{where}: {written!r} reads as {kept!r}"]
    return []


def load_model(obj):
    """obj as its model object; fails on a field the model does not know (or
    reads as something else), and on what the models' own validation
    refuses (a required field missing, a value outside an enum)."""
    client = kubernetes.client.ApiClient()
    try:
        model = client.deserialize(_Response(obj), model_name(obj))
    except ValueError as e:
        raise AssertionError(f"{obj['kind']} {obj['metadata']['name']} as "
                             f"{model_name(obj)}: {e}") from None
    problems = differences(obj, client.sanitize_for_serialization(model))
    if problems:
        raise AssertionError(f"{obj['kind']} {obj['metadata']['name']} as "
                             f"{model_name(obj)}:\n  " + "\n  ".join(problems))
    return model


# --- The Dockerfile ---------------------------------------------------------

def dockerfile_instructions(text):
    """[(INSTRUCTION, rest)], continuation lines joined, comments dropped."""
    lines = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    found = []
    for line in joined.splitlines():
        if line.strip():
            instruction, _, rest = line.strip().partition(" ")
            found.append((instruction.upper(), rest.strip()))
    return found


def dockerfile_env(instructions):
    """The runtime stage's ENV: {name: value} (ENV name=value ...)."""
    env = {}
    for instruction, rest in instructions:
        if instruction == "FROM":
            env = {}
        elif instruction == "ENV":
            for word in shlex.split(rest):
                name, _, value = word.partition("=")
                env[name] = value
    return env


def healthcheck_command(instructions):
    """HEALTHCHECK's command as `sh -c` would run it, and its options."""
    rest = [r for i, r in instructions if i == "HEALTHCHECK"][-1]
    options, _, command = rest.partition("CMD ")
    command = command.strip()
    if command.startswith("["):
        command = " ".join(shlex.quote(word) for word in json.loads(command))
    return command, options.split()


class ManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.flags = server_flags()
        cls.scratch = Path(tempfile.mkdtemp(prefix="manifests_test."))
        shutil.copytree(DEPLOY / "k8s", cls.scratch / "k8s")
        cls.base = render(cls.scratch / "k8s", BASE)
        cls.overlay = render(cls.scratch / "k8s", OVERLAY)
        cls.docs = {}
        for doc in cls.base:
            assert doc["kind"] not in cls.docs, f"two {doc['kind']}s in the base"
            cls.docs[doc["kind"]] = doc
        deployment = cls.docs["Deployment"]
        cls.pod = deployment["spec"]["template"]["spec"]
        cls.container = cls.pod["containers"][0]
        cls.args = parse_args(cls.container["args"])
        cls.container_ports = {p["name"]: p["containerPort"] for p in cls.container["ports"]}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scratch)

    def overlay_object(self, kind):
        found = [doc for doc in self.overlay if doc["kind"] == kind]
        self.assertEqual(len(found), 1, f"the overlay renders {len(found)} {kind}s")
        return found[0]

    def target_port(self, service_port):
        """The container port a Service port sends to."""
        target = service_port.get("targetPort", service_port["port"])
        if isinstance(target, str):
            self.assertIn(target, self.container_ports, f"no container port named {target}")
            return self.container_ports[target]
        return target

    # The kustomizations.

    def test_every_kind_is_there(self):
        for kind in ("Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"):
            self.assertIn(kind, self.docs)

    def test_each_kustomization_lists_every_manifest_beside_it(self):
        for name in (BASE, OVERLAY):
            folder = DEPLOY / "k8s" / name
            listed = yaml.safe_load((folder / "kustomization.yaml").read_text())
            manifests = {p.name for p in folder.glob("*.yaml")} - {"kustomization.yaml"}
            self.assertEqual(set(listed.get("resources", [])), manifests, name)

    def test_the_overlay_is_the_base_plus_the_operators_objects(self):
        base = [doc for doc in self.overlay
                if not doc["apiVersion"].startswith("monitoring.coreos.com/")]
        self.assertEqual(base, self.base, "the overlay changes the base's objects")
        self.assertEqual(sorted(doc["kind"] for doc in self.overlay if doc not in self.base),
                         ["PrometheusRule", "ServiceMonitor"])

    def test_core_objects_load_into_the_client_models(self):
        for doc in self.base:
            with self.subTest(kind=doc["kind"]):
                load_model(doc)

    def test_the_strict_loading_catches_a_misspelt_field(self):
        deployment = json.loads(json.dumps(self.docs["Deployment"]))
        deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = \
            deployment["spec"]["template"]["spec"]["containers"][0].pop("readinessProbe")
        with self.assertRaisesRegex(AssertionError, r"containers\.0\.readinesProbe"):
            load_model(deployment)
        deployment["spec"]["template"]["spec"]["containers"][0].pop("readinesProbe")
        deployment["spec"]["template"]["spec"]["containers"][0]["livenessProbe"]["httpGet"]["prot"] = 1
        with self.assertRaisesRegex(AssertionError, r"livenessProbe\.httpGet"):
            load_model(deployment)

    # The server's flags.

    def test_the_help_lists_the_flags_this_test_relies_on(self):
        for flag in ("address", "metrics_address", "http_address", "lame_duck",
                     "shutdown_delay", "shutdown_grace", "memory_budget_mb"):
            self.assertIn(flag, self.flags)

    def test_container_flags_exist(self):
        for name in self.args:
            self.assertIn(name, self.flags, f"--{name} is not a ptoserve flag")

    def test_ports_agree_with_the_flags(self):
        self.assertEqual(self.container_ports["grpc"], port_of(self.args["address"]))
        self.assertEqual(self.container_ports["metrics"], port_of(self.args["metrics_address"]))
        self.assertEqual(self.container_ports["http"], port_of(self.args["http_address"]))
        self.assertTrue(self.args["address"].startswith("0.0.0.0:"),
                        "in a pod the server must listen beyond loopback")

    def test_probes_ask_the_metrics_ports_health_routes(self):
        # The metrics port answers /v2/health/live and /v2/health/ready, and
        # no caller of the API or of gRPC holds its connections.
        paths = {"readinessProbe": "/v2/health/ready",
                 "livenessProbe": "/v2/health/live",
                 "startupProbe": "/v2/health/ready"}
        for probe in PROBES:
            if probe not in self.container:
                self.assertNotEqual(probe, "readinessProbe")
                self.assertNotEqual(probe, "livenessProbe")
                continue
            with self.subTest(probe=probe):
                handlers = set(self.container[probe]) & {"grpc", "httpGet", "tcpSocket", "exec"}
                self.assertEqual(handlers, {"httpGet"})
                get = self.container[probe]["httpGet"]
                self.assertEqual(get["path"], paths[probe])
                port = get["port"]
                if isinstance(port, str):
                    port = self.container_ports[port]
                self.assertEqual(port, port_of(self.args["metrics_address"]))

    def test_resources_are_bounded(self):
        resources = self.container["resources"]
        for resource in ("cpu", "memory"):
            with self.subTest(resource=resource):
                request = parse_quantity(resources["requests"][resource])
                limit = parse_quantity(resources["limits"][resource])
                self.assertGreater(request, 0)
                self.assertLessEqual(request, limit)

    def test_the_memory_limit_holds_the_memory_budget(self):
        # Jobs in flight hold up to --memory_budget_mb together; gRPC's
        # buffers, the binary and its threads need the rest. A budget at or
        # over the limit would have the kernel kill a busy pod before the
        # server says RESOURCE_EXHAUSTED.
        budget = int(self.args.get("memory_budget_mb", self.flags["memory_budget_mb"])) << 20
        limit = parse_quantity(self.container["resources"]["limits"]["memory"])
        self.assertLessEqual(budget, limit * 3 / 4,
                             f"--memory_budget_mb leaves under a quarter of the {limit} B limit")

    def test_termination_outlasts_the_drain(self):
        drain = sum(seconds(self.args.get(flag, self.flags[flag]))
                    for flag in ("shutdown_delay", "lame_duck", "shutdown_grace"))
        self.assertGreater(self.pod["terminationGracePeriodSeconds"], drain)

    # Security.

    def test_pod_runs_as_non_root(self):
        self.assertTrue(self.pod["securityContext"]["runAsNonRoot"])
        self.assertNotEqual(self.pod["securityContext"]["runAsUser"], 0)

    def test_container_is_locked_down(self):
        context = self.container["securityContext"]
        self.assertIs(context["readOnlyRootFilesystem"], True)
        self.assertIs(context["allowPrivilegeEscalation"], False)
        self.assertEqual(context["capabilities"]["drop"], ["ALL"])
        self.assertFalse(context["capabilities"].get("add"))
        self.assertFalse(context.get("privileged", False))
        self.assertNotEqual(context.get("runAsUser", 1), 0)

    # Services.

    def test_service_is_headless_and_targets_the_named_ports(self):
        service = self.docs["Service"]["spec"]
        self.assertEqual(service["clusterIP"], "None")
        for port in service["ports"]:
            self.assertIn(port["targetPort"], self.container_ports)
        self.assertEqual(service["selector"],
                         self.docs["Deployment"]["spec"]["selector"]["matchLabels"])

    def test_the_headless_service_names_the_grpc_port(self):
        # Clients resolve dns:///ptoserve.NAMESPACE.svc...:PORT to the pods'
        # own addresses and dial PORT there, past any Service: so the port
        # named grpc must be the container's own.
        service = self.docs["Service"]
        ports = {p["name"]: p for p in service["spec"]["ports"]}
        self.assertIn("grpc", ports)
        self.assertEqual(self.target_port(ports["grpc"]), port_of(self.args["address"]))
        self.assertEqual(ports["grpc"]["port"], port_of(self.args["address"]))
        labels = self.docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
        self.assertLessEqual(service["spec"]["selector"].items(), labels.items(),
                             "the Service selects no pod of the Deployment")

    def test_the_service_names_the_http_port_by_an_allowed_host(self):
        # The HTTP/JSON API is reached through the Service's name, which the
        # server must accept as a Host (else 421).
        service = self.docs["Service"]
        ports = {p["name"]: p for p in service["spec"]["ports"]}
        self.assertIn("http", ports)
        self.assertEqual(self.target_port(ports["http"]),
                         port_of(self.args["http_address"]))
        self.assertEqual(ports["http"]["port"], port_of(self.args["http_address"]))
        allowed = self.args["http_allowed_hosts"].split(",")
        name = service["metadata"]["name"]
        self.assertIn(name, allowed)
        self.assertIn(f"{name}.default.svc.cluster.local", allowed)

    def test_budget_and_autoscaler_point_at_the_deployment(self):
        labels = self.docs["Deployment"]["spec"]["selector"]["matchLabels"]
        self.assertEqual(self.docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"],
                         labels)
        target = self.docs["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
        self.assertEqual(target["kind"], "Deployment")
        self.assertEqual(target["name"], self.docs["Deployment"]["metadata"]["name"])
        self.assertGreaterEqual(self.docs["HorizontalPodAutoscaler"]["spec"]["minReplicas"],
                                self.docs["Deployment"]["spec"]["replicas"])

    # The Prometheus Operator overlay (its objects are custom resources, with
    # no models: checked as they are).

    def test_service_monitor_scrapes_the_metrics_port(self):
        monitor = self.overlay_object("ServiceMonitor")
        self.assertEqual(monitor["apiVersion"], "monitoring.coreos.com/v1")
        service = self.docs["Service"]
        self.assertLessEqual(monitor["spec"]["selector"]["matchLabels"].items(),
                             service["metadata"]["labels"].items(),
                             "the ServiceMonitor selects no Service of ptoserve's")
        self.assertNotIn("namespace", monitor["metadata"])  # the Service's own
        ports = {p["name"]: p for p in service["spec"]["ports"]}
        self.assertTrue(monitor["spec"]["endpoints"])
        for endpoint in monitor["spec"]["endpoints"]:
            self.assertIn(endpoint["port"], ports, "the ServiceMonitor names no Service port")
            self.assertEqual(self.target_port(ports[endpoint["port"]]),
                             port_of(self.args["metrics_address"]))
            self.assertEqual(endpoint.get("path", "/metrics"), "/metrics")

    def test_prometheus_rule_carries_the_rules_file(self):
        rule = self.overlay_object("PrometheusRule")
        self.assertEqual(rule["apiVersion"], "monitoring.coreos.com/v1")
        self.assertTrue(RULES.exists(), f"{RULES} is missing (it is in //deploy:files): "
                        "the PrometheusRule's groups are a copy of its groups")
        groups = yaml.safe_load(RULES.read_text())["groups"]
        if rule["spec"]["groups"] != groups:
            def lines(value):
                return yaml.safe_dump(value, sort_keys=True, width=1 << 20).splitlines()
            diff = difflib.unified_diff(lines(groups), lines(rule["spec"]["groups"]),
                                        f"{RULES} groups", "PrometheusRule spec.groups",
                                        lineterm="")
            self.fail(f"deploy/k8s/{OVERLAY}/prometheusrule.yaml's spec.groups differ "
                      f"from {RULES}'s groups (its header says how to copy them):\n"
                      + "\n".join(diff))

    # The Dockerfile.

    def test_dockerfile_agrees(self):
        text = (DEPLOY / "Dockerfile").read_text()
        instructions = dockerfile_instructions(text)
        self.assertIn("RUN tools/setup.sh", text)
        # tools/serve.sh's build runs (its optional disk cache
        # aside): optimized, the server and ptoctl.
        build = re.search(r"^RUN bazel build (.*?)\\\n &&", text, re.M | re.S).group(1)
        words = re.sub(r"\$\([^)]*\)", " ", build).replace("\\\n", " ").split()
        self.assertEqual(words, ["-c", "opt", "//server:ptoserve", "//client/ptoctl"])
        self.assertRegex(text, r"(?m)^USER 10001$")
        # The addresses come from the environment, where HEALTHCHECK reads
        # the gRPC one too.
        entry = json.loads([r for i, r in instructions if i == "ENTRYPOINT"][-1])
        self.assertEqual(entry[0], "ptoserve")
        from_env = parse_args(entry[1:]).get("tryfromenv", "").split(",")
        env = dockerfile_env(instructions)
        addresses = {}
        for name in ("address", "metrics_address", "http_address"):
            self.assertIn(name, from_env)
            addresses[name] = env[f"FLAGS_{name}"]
        for name in from_env:
            self.assertIn(name, self.flags)
        self.assertTrue(addresses["address"].startswith("0.0.0.0:"))
        # A port published with -p is reached as 127.0.0.1 on the host.
        self.assertIn("http_allowed_hosts", from_env)
        self.assertIn("127.0.0.1", env["FLAGS_http_allowed_hosts"].split(","))
        exposed = {int(p) for p in re.search(r"^EXPOSE (.*)$", text, re.M).group(1).split()}
        self.assertEqual(exposed, {port_of(a) for a in addresses.values()})
        command, _ = healthcheck_command(instructions)
        self.assertRegex(command, r"^ptoctl .*health")
        self.assertNotIn(str(port_of(addresses["address"])), command,
                         "HEALTHCHECK names the port rather than following FLAGS_address")

    def test_healthcheck_follows_the_address_the_server_listens_on(self):
        # The image's entrypoint and HEALTHCHECK, run here as they run in a
        # container started with -e FLAGS_address=127.0.0.1:PORT.
        instructions = dockerfile_instructions((DEPLOY / "Dockerfile").read_text())
        entry = json.loads([r for i, r in instructions if i == "ENTRYPOINT"][-1])
        command, _ = healthcheck_command(instructions)
        bin_dir = self.scratch / "bin"
        bin_dir.mkdir()
        (bin_dir / "ptoserve").symlink_to(PTOSERVE)
        (bin_dir / "ptoctl").symlink_to(PTOCTL)
        env = dict(os.environ, **dockerfile_env(instructions))
        env["PATH"] = f"{bin_dir}:{env.get('PATH', '/usr/bin:/bin')}"
        port = free_port()
        env.update(FLAGS_address=f"127.0.0.1:{port}", FLAGS_metrics_address="",
                   FLAGS_http_address="")
        server = subprocess.Popen(entry, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        try:
            deadline = time.monotonic() + 20
            while True:
                check = subprocess.run(["/bin/sh", "-c", command], env=env,
                                       capture_output=True, text=True)
                if check.returncode == 0 or time.monotonic() > deadline:
                    break
                self.assertIsNone(server.poll(), "the entrypoint exited")
                time.sleep(0.1)
            self.assertEqual(check.returncode, 0,
                             f"HEALTHCHECK against 127.0.0.1:{port}: {check.stderr}")
            elsewhere = dict(env, FLAGS_address=f"127.0.0.1:{free_port()}")
            check = subprocess.run(["/bin/sh", "-c", command], env=elsewhere,
                                   capture_output=True, text=True)
            self.assertNotEqual(check.returncode, 0,
                                "HEALTHCHECK passed with FLAGS_address on a port "
                                "nothing listens on")
        finally:
            server.send_signal(signal.SIGTERM)
            output, _ = server.communicate(timeout=30)
        self.assertIn(f"listening on 127.0.0.1:{port}", output)
        self.assertEqual(server.returncode, 0, output)


if __name__ == "__main__":
    if not os.access(KUBECTL, os.X_OK):
        sys.exit(f"manifests_test: no kubectl at {KUBECTL}; tools/setup.sh unpacks "
                 "Debian's kubernetes-client there (its kustomize renders deploy/k8s)")
    unittest.main(argv=sys.argv[:1], verbosity=2)
