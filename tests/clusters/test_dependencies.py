"""The *dependencies* phase against the sandbox: EKS add-ons with pod identity roles and the KubeRay operator,
reconciled into ClusterDependency rows, replaced on retry only where they failed, observed without changes, and
removed exactly as far as we installed them.

Each test builds an ACTIVE EKS cluster directly with boto3 and runs only this phase, through test pipelines."""

from __future__ import annotations

import json
import re
import time

import jsonschema
import pytest
import yaml
from django.test import Client
from django.urls import reverse
from kubernetes import client as k8s

from cloud import aws, kube, kube_manifests
from clusters import dependencies, hyperpod_chart, kuberay, pod_identity
from clusters.models import ClusterDependency, ClusterState, DependencyState
from clusters.ownership import MANAGED_BY_LABEL, iam_name, kube_labels, owned_by
from clusters.phases import dependencies as phase
from config.context import Source
from mcp_server.testing import call_tool
from operations import services
from operations.context import StepContext
from operations.models import OperationState, PhaseState, PhaseStep
from operations.pipeline import Pipeline, register
from sandbox.kube.crds import crds_dir

REGION = "us-west-2"
CREATE_KIND = "test.clusters.dependencies"
DELETE_KIND = "test.clusters.dependencies.delete"
register(Pipeline(kind=CREATE_KIND, phases=(phase.CREATE,)))
register(Pipeline(kind=DELETE_KIND, phases=(phase.DELETE,)))

INSTALLED = [component.name for component in dependencies.ON_CREATE]
ADDONS = [component.name for component in dependencies.ON_CREATE if component.kind == "addon"]
#: The reference CRDs: ``$INSTANTSTART_CRDS_DIR`` (the shared ``crds/`` folder) or the project's vendored copy of it.
REFERENCE_CRDS = crds_dir()


def eks_cluster(name: str) -> dict:
    """An ACTIVE EKS cluster (access entries only) on its own VPC, created as the *eks* phase would."""
    ec2, iam, eks = (aws.client(service, region=REGION) for service in ("ec2", "iam", "eks"))
    vpc = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.20.{index * 16}.0/20",
                                 AvailabilityZone=f"{REGION}{zone}")["Subnet"]["SubnetId"]
               for index, zone in enumerate("ab")]
    role = iam.create_role(RoleName=f"{name}-eks", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "eks.amazonaws.com"},
                                                "Action": "sts:AssumeRole"}]}))["Role"]["Arn"]
    eks.create_cluster(name=name, roleArn=role, resourcesVpcConfig={"subnetIds": subnets},
                       accessConfig={"authenticationMode": "API"})
    deadline = time.monotonic() + 30
    while (found := eks.describe_cluster(name=name)["cluster"])["status"] != "ACTIVE":
        assert time.monotonic() < deadline, f"EKS cluster {name} is still {found['status']}"
        time.sleep(0.05)
    return found


def wait_for_addon(name: str, eks_name: str, status: str = "ACTIVE") -> dict:
    eks = aws.client("eks", region=REGION)
    deadline = time.monotonic() + 30
    while (addon := eks.describe_addon(clusterName=eks_name, addonName=name)["addon"])["status"] != status:
        assert time.monotonic() < deadline, f"add-on {name} is still {addon['status']}"
        time.sleep(0.02)
    return addon


@pytest.fixture
def cluster(sandbox, make_cluster):
    """A cluster row whose EKS control plane exists and is ACTIVE (the *eks* phase's work, done directly)."""
    row = make_cluster("alpha")
    found = eks_cluster(f"alpha-{row.pk}")
    row.eks_name, row.eks_arn, row.eks_status = found["name"], found["arn"], found["status"]
    row.oidc_issuer = found["identity"]["oidc"]["issuer"]
    row.save()
    return row


@pytest.fixture
def core(cluster):
    return k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=REGION))


@pytest.fixture
def node(core):
    """A Ready node, so the KubeRay operator's pod can run (HyperPod nodes join after this phase)."""
    core.create_node({"metadata": {"name": "node-a", "labels": {"kubernetes.io/os": "linux"}}, "status": {
        "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})


def start(cast, cluster, kind: str = CREATE_KIND):
    operation, _ = services.operation_start(
        actor=cast.admin, team=cast.team, kind=kind, title=kind, source=Source.SYSTEM, target=cluster,
        params={"cluster_id": cluster.pk, "name": cluster.name, "region": REGION, "eks_name": cluster.eks_name})
    return operation


def requests(sandbox, operation: str, since: int = 0) -> list[dict]:
    return sandbox.control("GET", f"requests?operation={operation}&effective=1&since={since}")["requests"]


def last_seq(sandbox) -> int:
    return max((entry["seq"] for entry in sandbox.control("GET", "requests")["requests"]), default=0)


def stored(api, manifest: dict) -> dict | None:
    """The object ``manifest`` describes as the cluster has it, or ``None``."""
    return kube_manifests.read(api, kube_manifests.path(manifest))


def rows(cluster) -> dict[str, ClusterDependency]:
    return {row.component: row for row in ClusterDependency.objects.filter(cluster=cluster)}


@pytest.fixture
def installed(cast, cluster, node, drive):
    """The phase run to success on the cluster."""
    operation = drive(start(cast, cluster))
    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    return operation


def test_phase_brings_every_component_active_with_their_rows(sandbox, cluster, installed):
    recorded = rows(cluster)
    assert sorted(recorded) == sorted(INSTALLED)
    for component in INSTALLED:
        row = recorded[component]
        assert (row.desired_state, row.observed_state, row.managed, row.last_error) == (
            DependencyState.ACTIVE, DependencyState.ACTIVE, True, ""), component
        assert row.version and row.observed_at is not None, component
    assert recorded[kuberay.NAME].version == kuberay.VERSION

    created = [entry["params"]["addonName"] for entry in requests(sandbox, "CreateAddon")]
    assert sorted(created) == sorted(ADDONS)  # each exactly once
    first_two = {created[0], created[1]}
    assert first_two == {"eks-pod-identity-agent", "cert-manager"}  # what others need comes first
    eks = aws.client("eks", region=REGION)
    for name in ADDONS:
        assert owned_by(eks.describe_addon(clusterName=cluster.eks_name, addonName=name)["addon"]["tags"], cluster)


def test_csi_drivers_assume_least_privilege_pod_identity_roles(sandbox, cluster, installed):
    eks, iam = aws.client("eks", region=REGION), aws.client("iam", region=REGION)
    associations = {(a["namespace"], a["serviceAccount"]): a for a in eks.list_pod_identity_associations(
        clusterName=cluster.eks_name)["associations"]}
    assert set(associations) == {("kube-system", "s3-csi-driver-sa"), ("kube-system", "fsx-csi-controller-sa"),
                                 ("amazon-cloudwatch", "cloudwatch-agent")}
    for (_, account), purpose in {("kube-system", "s3-csi-driver-sa"): "s3-csi",
                                  ("kube-system", "fsx-csi-controller-sa"): "fsx-csi",
                                  ("amazon-cloudwatch", "cloudwatch-agent"): "cloudwatch"}.items():
        association = eks.describe_pod_identity_association(
            clusterName=cluster.eks_name,
            associationId=associations[next(key for key in associations if key[1] == account)]["associationId"],
        )["association"]
        role = iam.get_role(RoleName=iam_name(cluster, purpose))["Role"]
        assert association["roleArn"] == role["Arn"]
        assert owned_by(iam.list_role_tags(RoleName=role["RoleName"])["Tags"], cluster)
        trust = role["AssumeRolePolicyDocument"]
        trust = json.loads(trust) if isinstance(trust, str) else trust
        statement = trust["Statement"][0]
        assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
        assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
        assert statement["Condition"]["ArnEquals"]["aws:SourceArn"] == cluster.eks_arn

    s3_policy = iam.get_role_policy(RoleName=iam_name(cluster, "s3-csi"), PolicyName="s3-csi")["PolicyDocument"]
    bucket = f"arn:aws:s3:::instantstart-shared-123456789012-{REGION}"
    assert {resource for statement in s3_policy["Statement"] for resource in statement["Resource"]} == {
        bucket, f"{bucket}/teams/vision/*"}
    assert s3_policy["Statement"][0]["Condition"] == {"StringLike": {"s3:prefix": ["teams/vision/*"]}}
    fsx_policy = iam.get_role_policy(RoleName=iam_name(cluster, "fsx-csi"), PolicyName="fsx-csi")["PolicyDocument"]
    for document in (s3_policy, fsx_policy):
        for statement in document["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            assert all("*" not in action for action in actions), statement
    mutating = [s for s in fsx_policy["Statement"] if any(a.endswith(("FileSystem", "TagResource"))
                                                         and not a.startswith("fsx:Describe") for a in s["Action"])]
    assert mutating and all("Condition" in statement for statement in mutating)


def test_kuberay_objects_are_ours_and_its_crds_are_the_reference(cluster, installed, core):
    api = kube.api_client(cluster.eks_name, region=REGION)
    labels = kube_labels(cluster)
    extensions, apps = k8s.ApiextensionsV1Api(api), k8s.AppsV1Api(api)
    for file_name, crd_name in zip(kuberay.CRD_FILES, kuberay.CRD_NAMES, strict=True):
        applied = json.loads(extensions.read_custom_resource_definition(crd_name, _preload_content=False).data)
        with open(REFERENCE_CRDS / "ray.io" / file_name, encoding="utf-8") as stream:
            reference = yaml.load(stream, Loader=yaml.CSafeLoader)
        assert labels.items() <= applied["metadata"]["labels"].items()
        assert [version["schema"] for version in applied["spec"]["versions"]] == [
            version["schema"] for version in reference["spec"]["versions"]]
    deployment = apps.read_namespaced_deployment(kuberay.NAME, kuberay.NAMESPACE)
    assert labels.items() <= deployment.metadata.labels.items()
    assert deployment.spec.template.spec.containers[0].image == f"quay.io/kuberay/operator:{kuberay.VERSION}"
    assert deployment.status.ready_replicas == 1
    for read in (lambda: core.read_namespace(kuberay.NAMESPACE),
                 lambda: core.read_namespaced_service_account(kuberay.NAME, kuberay.NAMESPACE),
                 lambda: k8s.RbacAuthorizationV1Api(api).read_cluster_role(kuberay.NAME),
                 lambda: k8s.RbacAuthorizationV1Api(api).read_cluster_role_binding(kuberay.NAME)):
        assert labels.items() <= read().metadata.labels.items()

    ray_cluster = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "demo"}, "spec": {
        "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.9.0"}]}}}}}
    with open(REFERENCE_CRDS / "ray.io" / "rayclusters.yaml", encoding="utf-8") as stream:
        schema = yaml.load(stream, Loader=yaml.CSafeLoader)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    jsonschema.validate(ray_cluster, schema)
    objects = k8s.CustomObjectsApi(api)
    objects.create_namespaced_custom_object("ray.io", "v1", "default", "rayclusters", ray_cluster)
    broken = {**ray_cluster, "metadata": {"name": "broken"}, "spec": {"headGroupSpec": {"rayStartParams": "x"}}}
    with pytest.raises(k8s.ApiException) as refused:
        objects.create_namespaced_custom_object("ray.io", "v1", "default", "rayclusters", broken)
    assert refused.value.status == 422


def test_degraded_addon_fails_the_phase_and_a_retry_recreates_only_it(sandbox, cast, cluster, node, drive):
    sandbox.control("POST", "outcomes", {"resource": "eks-addon", "name": "aws-fsx-csi-driver",
                                         "outcome": "degrade", "message": "fsx-csi-controller has 0/2 replicas"})
    operation = drive(start(cast, cluster))
    assert operation.state == OperationState.FAILED
    assert operation.error_code == "dependency_failed"
    assert "aws-fsx-csi-driver is DEGRADED" in operation.error_message
    assert "fsx-csi-controller has 0/2 replicas" in operation.error_message
    degraded = rows(cluster)["aws-fsx-csi-driver"]
    assert degraded.observed_state == DependencyState.DEGRADED
    assert "fsx-csi-controller has 0/2 replicas" in degraded.last_error
    assert len(requests(sandbox, "CreateAddon")) == len(ADDONS)

    sandbox.control("DELETE", "outcomes")
    before = last_seq(sandbox)
    services.operation_retry(actor=cast.admin, operation=operation, source=Source.SYSTEM)
    operation = drive(operation)
    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    assert [entry["params"]["addonName"] for entry in requests(sandbox, "CreateAddon", before)] == [
        "aws-fsx-csi-driver"]
    assert [entry["params"]["addonName"] for entry in requests(sandbox, "DeleteAddon", before)] == [
        "aws-fsx-csi-driver"]
    assert requests(sandbox, "CreateRole", before) == []
    recovered = rows(cluster)["aws-fsx-csi-driver"]
    assert (recovered.observed_state, recovered.last_error) == (DependencyState.ACTIVE, "")


def test_running_the_submit_step_again_changes_nothing(sandbox, cluster, installed):
    api = kube.api_client(cluster.eks_name, region=REGION)
    versions = {manifest["kind"]: stored(api, manifest)["metadata"]["resourceVersion"]
                for manifest in kuberay.manifests(cluster)}
    before = last_seq(sandbox)
    lease = "test-lease"
    type(installed).objects.filter(pk=installed.pk).update(claimed_by=lease)
    installed.refresh_from_db()
    step = installed.phases.get(slug="dependencies")
    phase.submit_dependencies(StepContext(installed, step, lease=lease, region=REGION))

    assert sandbox.control("GET", f"requests?since={before}")["requests"] == []
    assert versions == {manifest["kind"]: stored(api, manifest)["metadata"]["resourceVersion"]
                        for manifest in kuberay.manifests(cluster)}
    assert all(row.observed_state == DependencyState.ACTIVE for row in rows(cluster).values())


def test_observe_reports_what_is_there_and_marks_foreign_addons_unmanaged(sandbox, cluster):
    eks = aws.client("eks", region=REGION)
    for name in ("cert-manager", "amazon-sagemaker-hyperpod-observability"):
        eks.create_addon(clusterName=cluster.eks_name, addonName=name)
        wait_for_addon(name, cluster.eks_name)
    before = last_seq(sandbox)

    seen = {observation.component: observation for observation in dependencies.observe(cluster)}
    assert sandbox.control("GET", f"requests?since={before}")["requests"] == []
    assert [name for name in seen] == [component.name for component in dependencies.CATALOG]
    for name in ("cert-manager", "amazon-sagemaker-hyperpod-observability"):
        assert (seen[name].state, seen[name].managed, seen[name].status) == (DependencyState.ACTIVE, False, "ACTIVE")
        assert seen[name].version
    assert seen["eks-pod-identity-agent"].state == DependencyState.ABSENT
    assert seen[kuberay.NAME].state == DependencyState.ABSENT

    dependencies.record(cluster, seen.values())
    recorded = rows(cluster)
    assert set(recorded) == {*INSTALLED, "amazon-sagemaker-hyperpod-observability"}
    assert recorded["cert-manager"].managed is False
    assert recorded["amazon-sagemaker-hyperpod-observability"].managed is False
    assert (recorded["eks-pod-identity-agent"].observed_state, recorded["eks-pod-identity-agent"].managed) == (
        DependencyState.ABSENT, True)


def test_observe_without_an_eks_control_plane_reports_everything_absent(sandbox, make_cluster):
    seen = dependencies.observe(make_cluster("beta", state=ClusterState.FAILED))
    assert {observation.state for observation in seen} == {DependencyState.ABSENT}


def test_delete_removes_exactly_what_we_installed(sandbox, cast, cluster, node, core, drive):
    eks, iam = aws.client("eks", region=REGION), aws.client("iam", region=REGION)
    eks.create_addon(clusterName=cluster.eks_name, addonName="cert-manager")
    eks.create_addon(clusterName=cluster.eks_name, addonName="metrics-server")
    wait_for_addon("cert-manager", cluster.eks_name)
    core.create_namespace({"metadata": {"name": "someone-else"}})
    before = last_seq(sandbox)
    operation = drive(start(cast, cluster))
    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    assert rows(cluster)["cert-manager"].managed is False
    assert "cert-manager" not in [entry["params"]["addonName"] for entry in requests(sandbox, "CreateAddon", before)]

    removal = drive(start(cast, cluster, DELETE_KIND))
    assert removal.state == OperationState.SUCCEEDED, removal.error_message
    assert sorted(eks.list_addons(clusterName=cluster.eks_name)["addons"]) == ["cert-manager", "metrics-server"]
    assert eks.list_pod_identity_associations(clusterName=cluster.eks_name)["associations"] == []
    for component in dependencies.ON_CREATE:
        if component.identity is not None:
            with pytest.raises(iam.exceptions.NoSuchEntityException):
                iam.get_role(RoleName=iam_name(cluster, component.identity.purpose))
    api = kube.api_client(cluster.eks_name, region=REGION)
    assert all(stored(api, manifest) is None for manifest in kuberay.manifests(cluster))
    assert core.list_namespace(label_selector=f"{MANAGED_BY_LABEL}=instantstart").items == []
    assert core.read_namespace("someone-else").metadata.name == "someone-else"
    recorded = rows(cluster)
    assert {(row.desired_state, row.observed_state) for row in recorded.values() if row.managed} == {
        (DependencyState.ABSENT, DependencyState.ABSENT)}
    assert recorded["cert-manager"].desired_state == DependencyState.ACTIVE

    before = last_seq(sandbox)
    again = drive(start(cast, cluster, DELETE_KIND))
    assert again.state == OperationState.SUCCEEDED
    assert again.phases.get().state == PhaseState.SUCCEEDED
    assert sandbox.control("GET", f"requests?since={before}")["requests"] == []


def test_without_a_node_the_operator_is_applied_and_waits_for_one(sandbox, cast, cluster, core, drive):
    operation = drive(start(cast, cluster))
    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    wanted = len(dependencies.ON_CREATE)
    assert operation.phases.get().status_reason == \
        f"{wanted - 1} of {wanted} components active; kuberay-operator waiting for a node"
    assert (rows(cluster)[kuberay.NAME].observed_state, rows(cluster)[kuberay.NAME].last_error) == (
        DependencyState.INSTALLING, "")
    waiting = dependencies.observe_operator(cluster)
    assert waiting.waiting_for_nodes and "Waiting for a node" in waiting.message and not waiting.missing

    core.create_node({"metadata": {"name": "node-b"}, "status": {
        "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})
    deadline = time.monotonic() + 30
    while (seen := dependencies.observe_operator(cluster)).state != DependencyState.ACTIVE:
        assert time.monotonic() < deadline, seen
        time.sleep(0.05)
    dependencies.record(cluster, [seen])
    assert (rows(cluster)[kuberay.NAME].observed_state, seen.version) == (DependencyState.ACTIVE, kuberay.VERSION)


def test_a_role_of_our_name_that_is_not_ours_is_refused(sandbox, cast, cluster, node, drive):
    aws.client("iam", region=REGION).create_role(
        RoleName=iam_name(cluster, "s3-csi"), AssumeRolePolicyDocument=json.dumps(pod_identity.pod_identity_trust(
            cluster)))
    operation = drive(start(cast, cluster))
    assert (operation.state, operation.error_code) == (OperationState.FAILED, "role_name_taken")
    created = [entry["params"]["addonName"] for entry in requests(sandbox, "CreateAddon")]
    assert "aws-mountpoint-s3-csi-driver" not in created


def test_a_submit_step_run_again_mid_phase_adopts_instead_of_resending(sandbox, cast, cluster, node, drive):
    operation = drive(start(cast, cluster), until=lambda op: op.phases.get().step == PhaseStep.POLL)
    submitted = [entry["params"]["addonName"] for entry in requests(sandbox, "CreateAddon")]
    assert sorted(submitted) == ["cert-manager", "eks-pod-identity-agent"]
    operation.phases.update(step=PhaseStep.SUBMIT)  # the worker died before it recorded the submit

    operation = drive(operation)
    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    sent = sandbox.control("GET", "requests?operation=CreateAddon")["requests"]
    assert sorted(entry["params"]["addonName"] for entry in sent) == sorted(ADDONS)
    assert sorted(entry["params"]["RoleName"] for entry in requests(sandbox, "CreateRole")
                  if entry["params"]["RoleName"].startswith("instantstart-")) == sorted(
        iam_name(cluster, purpose) for purpose in ("cloudwatch", "fsx-csi", "s3-csi"))


def test_hyperpods_dependencies_are_applied_shown_reinstalled_on_refresh_and_removed(
        sandbox, cast, cluster, core, node, drive, api, token_for):
    core.create_node({"metadata": {"name": "gpu-a", "labels": {"node.kubernetes.io/instance-type": "ml.g5.8xlarge"}},
                      "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                                 "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})
    operation = drive(start(cast, cluster))
    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    kube_api = kube.api_client(cluster.eks_name, region=REGION)
    apps, rbac = k8s.AppsV1Api(kube_api), k8s.RbacAuthorizationV1Api(kube_api)

    # Every object of every component, read back as the cluster has it, carrying our labels.
    assert core.read_namespace(hyperpod_chart.NAMESPACE).metadata.labels[MANAGED_BY_LABEL] == "instantstart"
    for name in hyperpod_chart.COMPONENTS:
        for manifest in hyperpod_chart.manifests(cluster, name):
            found = stored(kube_api, manifest)
            assert found is not None, (name, manifest["kind"], manifest["metadata"]["name"])
            assert found["metadata"]["labels"].items() >= kube_labels(cluster).items()
    daemon_sets = {(ds.metadata.namespace, ds.metadata.name): ds.spec.template.spec.containers[0].image
                   for ds in apps.list_daemon_set_for_all_namespaces().items}
    assert daemon_sets == {
        ("aws-hyperpod", "health-monitoring-agent"):
            "905418368575.dkr.ecr.us-west-2.amazonaws.com/hyperpod-health-monitoring-agent:1.0.1892.0_1.0.424.0",
        ("aws-hyperpod", "health-monitoring-agent-non-nvidia"):
            "905418368575.dkr.ecr.us-west-2.amazonaws.com/hyperpod-health-monitoring-agent:1.0.1892.0_1.0.424.0",
        ("kube-system", "hyperpod-dependencies-nvidia-device-plugin"): "nvcr.io/nvidia/k8s-device-plugin:v0.16.1",
        ("kube-system", "hyperpod-dependencies-aws-efa-k8s-device-plugin"):
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.13",
        ("kube-system", "neuron-device-plugin-daemonset"): "public.ecr.aws/neuron/neuron-device-plugin:2.19.16.0"}
    assert k8s.CoreV1Api(kube_api).read_namespaced_service_account("job-auto-restart", "aws-hyperpod")
    assert rbac.read_cluster_role_binding("job-auto-restart").subjects[0].name == "hyperpod-service-linked-role"
    nvidia = apps.read_namespaced_daemon_set("hyperpod-dependencies-nvidia-device-plugin", "kube-system").status
    assert (nvidia.desired_number_scheduled, nvidia.number_ready) == (1, 1), "its pod runs on the GPU node"
    recorded = rows(cluster)
    for name in hyperpod_chart.COMPONENTS:
        assert (recorded[name].observed_state, recorded[name].managed, recorded[name].version) == (
            DependencyState.ACTIVE, True, hyperpod_chart.version(name)), name

    # The dependency panel: REST, MCP and the portal.
    detail = api(cast.viewer).get(f"/api/v1/clusters/{cluster.pk}").json()["dependencies"]
    assert {entry["component"]: entry["observed_state"] for entry in detail}.items() >= {
        name: "active" for name in hyperpod_chart.COMPONENTS}.items()
    is_error, body = call_tool(token_for(cast.viewer), "get_cluster", {"cluster_id": cluster.pk})
    assert not is_error and {entry["component"] for entry in body["dependencies"]} >= set(hyperpod_chart.COMPONENTS)
    client = Client()
    client.force_login(cast.viewer)
    page = client.get(reverse("cluster-detail", args=[cluster.pk])).content.decode()
    assert re.search(r'data-dependency="nvidia-device-plugin".*?badge-dep-active.*?v0\.16\.1', page, re.S)

    # A refresh applies a deleted component again and says it was found absent.
    apps.delete_namespaced_daemon_set("hyperpod-dependencies-nvidia-device-plugin", "kube-system")
    response = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/refresh")
    assert response.status_code == 200, response.json()
    assert {"field": "dependency nvidia-device-plugin", "recorded": "active", "actual": "absent"} in \
        response.json()["drift"]
    again = apps.read_namespaced_daemon_set("hyperpod-dependencies-nvidia-device-plugin", "kube-system")
    assert again.metadata.labels[MANAGED_BY_LABEL] == "instantstart"
    assert rows(cluster)["nvidia-device-plugin"].observed_state in (DependencyState.INSTALLING, DependencyState.ACTIVE)

    # Delete removes every one of them.
    removal = drive(start(cast, cluster, DELETE_KIND))
    assert removal.state == OperationState.SUCCEEDED, removal.error_message
    assert all(stored(kube_api, manifest) is None for name in hyperpod_chart.COMPONENTS
               for manifest in hyperpod_chart.manifests(cluster, name) if manifest["kind"] != "Namespace")
    assert apps.list_daemon_set_for_all_namespaces().items == []
