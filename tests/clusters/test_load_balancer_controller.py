"""The ``load_balancer_controller`` feature against the sandbox: enabling makes the IAM role with the controller's
documented policy, its EKS Pod Identity association and the chart's objects, until the controller runs and a load
balancer Service gets its hostname; disabling is refused while such a Service exists, then leaves nothing behind.
Before it, a load balancer endpoint is refused on every face with the way to turn the feature on."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client
from django.urls import reverse
from kubernetes import client as k8s

import clusters.features.pipeline  # noqa: F401  (registers the cluster.features pipelines)
from cloud import aws, kube
from clusters import dependencies
from clusters import load_balancer_chart as chart
from clusters.ownership import iam_name
from inference.endpoints.services import require_load_balancer_controller
from mcp_server.testing import call_tool
from tests.clusters.sandbox import tracked_hyperpod_cluster
from tests.clusters.test_features import features, patch, run

FEATURE = "load_balancer_controller"
LB_TYPE = "service.beta.kubernetes.io/aws-load-balancer-type"


def _await(check, what: str, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout} s"
        time.sleep(0.05)
    return found


@pytest.mark.django_db(transaction=True)
def test_enable_runs_the_controller_with_its_identity_and_disable_leaves_nothing(api, cast, sandbox, drive, token_for):
    cluster = tracked_hyperpod_cluster(cast.team)
    deploy = {"cluster": cluster.pk, "name": "public", "gpus": 1, "model": "models/qwen", "exposure": "internal_lb"}
    refused = api(cast.operator).post("/api/v1/endpoints", deploy)
    assert refused.status_code == 409 and refused.json()["code"] == "load_balancer_controller_missing"
    assert f'"{FEATURE}": {{"enabled": true}}' in refused.json()["message"]
    assert "update_advanced_features" in refused.json()["message"]
    assert call_tool(token_for(cast.operator), "deploy_endpoint", deploy) == (True, refused.json())
    browser = Client()
    browser.force_login(cast.operator)
    page = browser.post(reverse("inference-endpoint-deploy"), {**deploy, "command": "", "replicas": 1,
                                                                 "port": 8000, "model_source": "shared"})
    assert page.status_code == 409 and 'data-error-code="load_balancer_controller_missing"' in page.content.decode()
    assert f'href="{reverse("cluster-detail", args=[cluster.pk])}#features-panel"' in page.content.decode()

    operation = run(drive, patch(api, cast.admin, cluster, {FEATURE: {"enabled": True}}))
    assert [phase.slug for phase in operation.phases.order_by("index")] == ["prerequisites", FEATURE]
    shown = features(api, cast.viewer, cluster)[FEATURE]
    assert shown["state"] == "enabled" and shown["managed"] and shown["details"]["version"] == "v3.5.0"
    assert [item["component"] for item in shown["prerequisites"]] == ["eks-pod-identity-agent"]

    iam, eks = aws.client("iam", region=cluster.region), aws.client("eks", region=cluster.region)
    role = iam_name(cluster, "load-balancer-controller")
    policy = iam.get_role_policy(RoleName=role, PolicyName="load-balancer-controller")["PolicyDocument"]
    assert (json.loads(policy) if isinstance(policy, str) else policy) == chart.iam_policy(cluster.region)
    trust = iam.get_role(RoleName=role)["Role"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Condition"]["StringEquals"]["aws:RequestTag/kubernetes-service-account"] == chart.SERVICE_ACCOUNT
    (association,) = eks.list_pod_identity_associations(clusterName=cluster.eks_name, namespace="kube-system",
                                                        serviceAccount=chart.SERVICE_ACCOUNT)["associations"]
    assert shown["details"]["pod_identity_association"] == association["associationId"]
    apps = k8s.AppsV1Api(kube.api_client(cluster.eks_name, region=cluster.region))
    core = k8s.CoreV1Api(apps.api_client)
    args = apps.read_namespaced_deployment(chart.NAME, "kube-system").spec.template.spec.containers[0].args
    vpc = eks.describe_cluster(name=cluster.eks_name)["cluster"]["resourcesVpcConfig"]["vpcId"]
    assert args == [f"--cluster-name={cluster.eks_name}", "--ingress-class=alb", f"--aws-region={cluster.region}",
                    f"--aws-vpc-id={vpc}"]
    assert set(core.read_namespaced_secret(chart.TLS_SECRET, "kube-system").data) == {"ca.crt", "tls.crt", "tls.key"}
    seen = dependencies.observe_load_balancer_controller(cluster)
    assert (seen.state, seen.managed, seen.version) == ("active", True, "v3.5.0")
    require_load_balancer_controller(cluster)
    core.delete_namespaced_service(chart.WEBHOOK_SERVICE, "kube-system")
    refreshed = api(cast.admin).post(f"/api/v1/clusters/{cluster.pk}/refresh", {})
    assert refreshed.status_code == 200, refreshed.content
    assert core.read_namespaced_service(chart.WEBHOOK_SERVICE, "kube-system").metadata.labels[
        "app.kubernetes.io/managed-by"] == "instantstart"

    core.create_namespaced_service("default", {"metadata": {"name": "chat", "annotations": {LB_TYPE: "external"}},
                                               "spec": {"type": "LoadBalancer", "selector": {"app": "chat"},
                                                        "ports": [{"port": 80, "targetPort": 8000}]}})
    _await(lambda: core.read_namespaced_service("chat", "default").status.load_balancer.ingress, "a hostname")
    refused = patch(api, cast.admin, cluster, {FEATURE: {"enabled": False}})
    assert refused.status_code == 400
    assert refused.json()["fields"][FEATURE][0]["code"] == "load_balancer_in_use"
    core.delete_namespaced_service("chat", "default")

    run(drive, patch(api, cast.admin, cluster, {FEATURE: {"enabled": False}}))
    assert features(api, cast.viewer, cluster)[FEATURE]["state"] == "disabled"
    assert apps.list_namespaced_deployment("kube-system", label_selector=f"app.kubernetes.io/name={chart.NAME}"
                                           ).items == []
    assert eks.list_pod_identity_associations(clusterName=cluster.eks_name, namespace="kube-system")[
        "associations"] == []
    assert role not in {item["RoleName"] for item in iam.list_roles()["Roles"]}
    assert not cluster.dependencies.filter(component=chart.NAME).exists()
