"""The Helm chart (deploy/helm/instantstart): linted and rendered by Helm's own Go SDK (helm-python-sdk, the ``test``
extra), shaped as docs/deploy.md promises, and every rendered object accepted by the sandbox's Kubernetes API with
server-side validation (server-side apply, ``dryRun=All``, ``fieldValidation=Strict``)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import helm_python as helm
import pytest
import yaml
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient

from cloud import aws, kube
from config.health import PROBES
from config.runner import child_commands
from tests.clusters.sandbox import make_eks_cluster, role_for

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "instantstart"
VALUES = yaml.safe_load((CHART / "ci" / "eks-values.yaml").read_text())
NAMESPACE = "instantstart"
KUBE_VERSION = "v1.32.0"


def render(values: dict | None = None) -> list[dict]:
    """Every object ``helm install instantstart`` would create (hooks included), as dicts."""
    with helm.Chart.load(CHART) as chart:
        manifests = chart.render(VALUES if values is None else values, name="instantstart", namespace=NAMESPACE,
                                 is_install=True)
    return [document for path, text in manifests.items() if path.endswith(".yaml")
            for document in yaml.safe_load_all(text) if document]


def by_kind(objects: list[dict], kind: str) -> dict[str, dict]:
    return {obj["metadata"]["name"]: obj for obj in objects if obj["kind"] == kind}


def env_of(container: dict) -> dict[str, dict]:
    return {variable["name"]: variable for variable in container["env"]}


@pytest.fixture(scope="module")
def objects() -> list[dict]:
    return render()


def test_helm_lint_is_clean():
    report = helm.lint(CHART, VALUES, strict=True, kube_version=KUBE_VERSION)
    assert report["errors"] == []
    assert [message for message in report["messages"] if message["severity"] >= 2] == []


def test_values_without_the_deployment_s_own_settings_are_refused():
    with pytest.raises(helm.HelmError) as refused:
        render({})
    assert "repository" in str(refused.value)
    without_cidrs = json.loads(json.dumps(VALUES))
    without_cidrs["networkPolicy"]["redisCidrs"] = []
    with pytest.raises(helm.HelmError, match=r"networkPolicy\.postgresqlCidrs and networkPolicy\.redisCidrs"):
        render(without_cidrs)


def test_the_product_s_processes_with_one_beat_and_migrations_first(objects):
    deployments = by_kind(objects, "Deployment")
    assert set(deployments) == {f"instantstart-{name}" for name in ("web", "worker", "beat", "logs")}
    commands = {name.removeprefix("instantstart-"): deployment["spec"]["template"]["spec"]["containers"][0]["command"]
                for name, deployment in deployments.items()}
    # The programs config.runner starts for `make run` (there: `python -m uvicorn`, `python manage.py`, ...).
    # The runner's beat runs the lean config.beat app (the same schedule and broker, no app registry); the chart's
    # beat runs the full config app.
    for name, command in child_commands("0.0.0.0", 3099).items():
        program = [part for part in command[1:] if part != "-m"]
        if name == "beat":
            program[program.index("config.beat")] = "config"
        started = [part for part in commands[name] if part != "python"]
        head = 4 if program[0] == "celery" else 2  # the program and what it runs (`celery -A config worker`)
        assert started[:head] == program[:head], name
    assert commands["logs"] == ["python", "manage.py", "follow_training_logs"]

    beat = deployments["instantstart-beat"]["spec"]
    assert beat["replicas"] == 1 and beat["strategy"] == {"type": "Recreate"}
    autoscaled = {hpa["spec"]["scaleTargetRef"]["name"]: hpa["spec"] for hpa in by_kind(objects,
                                                                                       "HorizontalPodAutoscaler").values()}
    assert set(autoscaled) == {"instantstart-web", "instantstart-worker"}
    assert all(spec["metrics"][0]["resource"]["name"] == "cpu" for spec in autoscaled.values())
    assert "replicas" not in deployments["instantstart-web"]["spec"]  # the HPA owns the count

    budgets = {pdb["spec"]["selector"]["matchLabels"]["app.kubernetes.io/component"]
               for pdb in by_kind(objects, "PodDisruptionBudget").values()}
    assert budgets == {"web", "worker", "logs"}

    job = by_kind(objects, "Job")["instantstart-migrate"]
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    script = shlex.split(job["spec"]["template"]["spec"]["containers"][0]["command"][2])
    assert script[:4] == ["python", "manage.py", "migrate", "--noinput"] and "ensure_first_admin" in script


def test_pods_run_unprivileged_with_limits_probes_and_secrets_by_reference(objects):
    pods = {obj["metadata"]["name"]: obj["spec"]["template"] for obj in objects if obj["kind"] in ("Deployment", "Job")}
    for name, template in pods.items():
        spec = template["spec"]
        assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] != 0, name
        assert spec["automountServiceAccountToken"] is False, name
        for container in spec["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False and context["readOnlyRootFilesystem"] is True, name
            assert context["capabilities"]["drop"] == ["ALL"], name
            assert {"cpu", "memory"} <= container["resources"]["requests"].keys() & container["resources"]["limits"]
            env = env_of(container)
            for secret in ("INSTANTSTART_SECRET_KEY", "POSTGRES_PASSWORD", "REDIS_PASSWORD",
                           "INSTANTSTART_METRICS_TOKEN"):
                assert "value" not in env[secret] and env[secret]["valueFrom"]["secretKeyRef"]["name"], (name, secret)
            assert env["DATABASE_URL"]["value"] == (
                "postgres://instantstart:$(POSTGRES_PASSWORD)@instantstart.abcdefghijkl.us-west-2.rds.amazonaws.com"
                ":5432/instantstart?sslmode=require")
            assert env["REDIS_URL"]["value"] == (
                "rediss://:$(REDIS_PASSWORD)@master.instantstart.abcdef.usw2.cache.amazonaws.com:6379/0")
            assert env["INSTANTSTART_SANDBOX"]["value"] == "0"

    web = pods["instantstart-web"]["spec"]["containers"][0]
    probed = {web[probe]["httpGet"]["path"] for probe in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probed == {"/healthz", "/readyz"} == set(PROBES)
    assert web["readinessProbe"]["httpGet"]["path"] == "/readyz"

    account = by_kind(objects, "ServiceAccount")["instantstart"]
    assert account["metadata"]["annotations"] == {"eks.amazonaws.com/role-arn": VALUES["serviceAccount"]["irsaRoleArn"]}
    assert {pods[name]["spec"]["serviceAccountName"] for name in pods if name != "instantstart-migrate"} == {
        "instantstart"}


def test_metrics_are_scraped_from_web_and_from_every_worker_pod(objects):
    templates = {name: obj["spec"]["template"] for name, obj in by_kind(objects, "Deployment").items()}
    web, worker = templates["instantstart-web"], templates["instantstart-worker"]
    assert web["metadata"]["annotations"]["prometheus.io/port"] == "3099"
    worker_container = worker["spec"]["containers"][0]
    port = worker_container["ports"][0]["containerPort"]
    assert worker["metadata"]["annotations"] == {"prometheus.io/scrape": "true", "prometheus.io/port": str(port),
                                                 "prometheus.io/path": "/metrics"}
    assert env_of(worker_container)["INSTANTSTART_WORKER_METRICS_PORT"]["value"] == str(port)
    assert "annotations" not in templates["instantstart-beat"]["metadata"]


def test_network_policies_admit_the_ingress_namespace_and_let_out_only_what_is_needed(objects):
    policies = by_kind(objects, "NetworkPolicy")
    deny = policies["instantstart-default-deny"]["spec"]
    assert deny["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in deny and "egress" not in deny
    web = policies["instantstart-web-ingress"]["spec"]
    sources = [peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] for peer in web["ingress"][0]
               ["from"]]
    assert sources == ["ingress-nginx", "monitoring"] and web["ingress"][0]["ports"] == [{"protocol": "TCP",
                                                                                          "port": 3099}]
    egress = policies["instantstart-egress"]["spec"]["egress"]
    reached = {(peer.get("ipBlock", {}).get("cidr"), port["port"]) for rule in egress for peer in rule["to"]
               for port in rule["ports"]}
    assert {("10.0.16.0/20", 5432), ("10.0.32.0/20", 6379), ("0.0.0.0/0", 443), (None, 53)} <= reached
    worker = policies["instantstart-worker-metrics"]["spec"]["ingress"]
    assert worker[0]["ports"] == [{"protocol": "TCP", "port": 9808}]


def _apply(api: k8s.ApiClient, dynamic: DynamicClient, obj: dict, *, dry_run: bool) -> tuple[int, dict]:
    """Server-side apply of ``obj`` (as ``kubectl apply --server-side --validate=strict``), returning the status and
    the body."""
    resource = dynamic.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    path = resource.path(name=obj["metadata"]["name"], namespace=NAMESPACE if resource.namespaced else None)
    query = [("fieldManager", "helm"), ("fieldValidation", "Strict"), *([("dryRun", "All")] if dry_run else [])]
    response = api.call_api(*api.param_serialize("PATCH", path, auth_settings=["BearerToken"], body=obj,
                                                 query_params=query,
                                                 header_params={"Content-Type": "application/apply-patch+yaml"}),
                            _request_timeout=10)
    response.read()
    return response.status, json.loads(response.data)


def test_the_rendered_chart_passes_the_sandbox_s_server_side_validation(sandbox, objects, tmp_path):
    cluster = make_eks_cluster("hosting")
    api = kube.api_client(cluster.name, region="us-west-2")
    dynamic = DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))
    k8s.CoreV1Api(api).create_namespace({"metadata": {"name": NAMESPACE}})

    answers = {f"{obj['kind']}/{obj['metadata']['name']}": _apply(api, dynamic, obj, dry_run=True) for obj in objects}
    assert {name: status for name, (status, _) in answers.items() if status not in (200, 201)} == {}
    assert answers["NetworkPolicy/instantstart-egress"][1]["spec"]["egress"][0]["ports"][0]["protocol"] == "UDP"
    assert k8s.AppsV1Api(api).list_namespaced_deployment(NAMESPACE).items == []  # a dry run stores nothing

    broken = by_kind(objects, "NetworkPolicy")["instantstart-egress"]
    broken = json.loads(json.dumps(broken).replace('"10.0.32.0/20"', '"10.0.32.0/40"'))
    status, body = _apply(api, dynamic, broken, dry_run=True)
    assert status == 422 and body["details"]["causes"][0]["field"] == "spec.egress[2].to[0].ipBlock.cidr"
    unknown = json.loads(json.dumps(by_kind(objects, "Deployment")["instantstart-beat"]))
    unknown["spec"]["template"]["spec"]["containers"][0]["securityContxt"] = {}
    status, body = _apply(api, dynamic, unknown, dry_run=True)
    assert status == 400 and "securityContxt" in body["message"]

    # EKS Pod Identity instead of IRSA: the association docs/deploy.md creates names the chart's ServiceAccount.
    association = aws.client("eks", region="us-west-2").create_pod_identity_association(
        clusterName=cluster.name, namespace=NAMESPACE, serviceAccount="instantstart",
        roleArn=role_for("InstantStartPods", "pods.eks.amazonaws.com"))["association"]
    assert association["serviceAccount"] == by_kind(objects, "ServiceAccount")["instantstart"]["metadata"]["name"]


def test_optional_parts_follow_the_values():
    values = json.loads(json.dumps(VALUES))
    values["secrets"]["metricsToken"]["name"] = ""
    values["redis"]["passwordSecret"]["name"] = ""
    values["networkPolicy"] = {"enabled": False}
    values["serviceAccount"] = {"irsaRoleArn": ""}
    values["worker"] = {"autoscaling": {"enabled": False}, "replicas": 3}
    objects = render(values)

    assert not by_kind(objects, "NetworkPolicy")
    assert [hpa["spec"]["scaleTargetRef"]["name"] for hpa in by_kind(objects, "HorizontalPodAutoscaler").values()] == [
        "instantstart-web"]
    deployments = by_kind(objects, "Deployment")
    assert deployments["instantstart-worker"]["spec"]["replicas"] == 3
    assert "annotations" not in by_kind(objects, "ServiceAccount")["instantstart"]["metadata"]
    for deployment in deployments.values():
        assert "annotations" not in deployment["spec"]["template"]["metadata"]  # nothing to scrape without a token
        env = env_of(deployment["spec"]["template"]["spec"]["containers"][0])
        assert "INSTANTSTART_METRICS_TOKEN" not in env and "REDIS_PASSWORD" not in env
        assert env["REDIS_URL"]["value"] == "rediss://master.instantstart.abcdef.usw2.cache.amazonaws.com:6379/0"
