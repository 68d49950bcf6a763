"""A team with a compute quota on another team's governed sandbox cluster works there from every face: the portal's
submit page offers the cluster as shared and the job lands as REST's does; endpoints — self-managed through the portal
(deployed, served, listed only for the deploying team, named by the cluster-delete refusal, deleted) and REST,
managed through REST — run in the team's namespace with its queue and priority; what the cluster's team keeps to
itself (a load balancer, KEDA autoscaling, its FSx) is refused with ``not_on_shared_cluster``; a cluster without a
quota is ``cluster_not_found`` on every face."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from kubernetes import client as k8s

from accounts.models import AuditEvent, Membership, Role
from cloud import aws, kube
from clusters.shared_bucket import ensure_shared_bucket, team_prefix
from inference.models import Endpoint
from mcp_server.testing import call_tool
from operations.models import Operation
from tests import factories
from tests.governance.test_governance import field_codes, run
from tests.inference.managed import install_inference_operator
from tests.training.sandbox import training_cluster
from training.models import TrainingJob

QUEUE, PRIORITY = "kueue.x-k8s.io/queue-name", "kueue.x-k8s.io/priority-class"


def signed_in(user) -> Client:
    browser = Client()
    browser.force_login(user)
    return browser


@pytest.mark.django_db(transaction=True)
def test_a_team_with_a_quota_submits_and_deploys_on_another_teams_cluster(api, cast, make_team, make_user, sandbox,
                                                                          drive, token_for):
    cluster = training_cluster(cast.team, instance_type="ml.g5.12xlarge", count=2, ray=False)
    admin = api(cast.admin)
    run(drive, admin.patch(f"/api/v1/clusters/{cluster.pk}/features", {"task_governance": {"enabled": True}}))
    run(drive, admin.request("PUT", f"/api/v1/clusters/{cluster.pk}/scheduler-config", {
        "priority_classes": [{"name": "high", "weight": 100}, {"name": "low", "weight": 10}], "fair_share": True}))
    robotics = make_team("Robotics")
    run(drive, admin.post("/api/v1/compute-quotas", {"cluster": cluster.pk, "team": robotics.pk,
                                                     "resources": [{"instance_type": "ml.g5.12xlarge", "count": 1}]}))
    guest = make_user()
    Membership.objects.create(team=robotics, user=guest, role=Role.OPERATOR)
    namespace = f"hyperpod-ns-{robotics.slug}"
    s3 = aws.client("s3", region=cluster.region)
    s3.put_object(Bucket=ensure_shared_bucket(s3, cluster.region), Key=f"{team_prefix(robotics.slug)}train.py",
                  Body=b"print('training')\n")
    unshared = factories.cluster(make_team("Speech Lab"), "unshared")
    browser = signed_in(guest)

    # the portal's submit page: the cluster is offered as shared, its groups and the team's files shown
    assert 'data-testid="job-new"' in browser.get(reverse("training-jobs")).content.decode()
    assert 'data-testid="endpoint-new"' in browser.get(reverse("inference-endpoints")).content.decode()
    submit = reverse("training-job-submit")
    form = browser.get(submit, {"recipe": "pytorch", "cluster": cluster.pk}).content.decode()
    assert f"{cluster.name} (shared by {cast.team.name})" in form and '<option value="workers"' in form
    files = browser.get(reverse("training-shared-files", args=[cluster.pk]), {"target": "cfg-script"})
    assert 'data-fill="/mnt/shared/train.py"' in files.content.decode()
    assert 'data-testid="browser-upload"' in files.content.decode()
    listed = api(guest).get(f"/api/v1/clusters/{cluster.pk}/shared-files").json()
    assert [entry["path"] for entry in listed["entries"]] == ["/mnt/shared/train.py"]
    assert api(guest).get(f"/api/v1/clusters/{unshared.pk}/shared-files").status_code == 404
    signed = api(guest).post(f"/api/v1/clusters/{cluster.pk}/shared-files/uploads", {"path": "data/a.txt"})
    assert signed.json()["key"] == f"{team_prefix(robotics.slug)}data/a.txt", signed.content
    assert AuditEvent.objects.get(action="shared_file.upload").team == robotics
    refused = browser.post(submit, {"recipe": "pytorch", "cluster": cluster.pk, "name": "arm", "priority": "urgent",
                                    "cfg-script": "train.py"})
    assert refused.status_code == 400 and 'data-error-code="unknown_priority_class"' in refused.content.decode()
    assert browser.post(submit, {"recipe": "pytorch", "cluster": unshared.pk, "cfg-script": "train.py"}
                        ).status_code == 404
    good = browser.post(submit, {"recipe": "pytorch", "cluster": cluster.pk, "name": "arm", "priority": "low",
                                 "cfg-script": "train.py", "cfg-instance_group": "workers"})
    job = TrainingJob.objects.get()
    assert good.status_code == 302, good.content.decode()
    assert (job.team, job.namespace, job.priority, job.operation.source) == (robotics, namespace, "low", "portal")
    assert job.manifest["metadata"]["labels"][QUEUE] == f"{namespace}-localqueue"
    assert job.manifest["metadata"]["labels"][PRIORITY] == "low-priority"
    assert api(cast.operator).get(f"/api/v1/training-jobs/{job.pk}").status_code == 404

    # a cluster without a quota for the team: the same refusal as someone else's cluster, on every face
    body = {"cluster": unshared.pk, "name": "chat", "model": "models/qwen", "gpus": 1}
    for path in ("/api/v1/endpoints", "/api/v1/managed-endpoints"):
        missing = api(guest).post(path, body)
        assert (missing.status_code, field_codes(missing)) == (404, {"cluster": "cluster_not_found"})
    is_error, answer = call_tool(token_for(guest), "deploy_endpoint", body)
    assert is_error and answer["fields"]["cluster"][0]["code"] == "cluster_not_found"
    assert browser.post(reverse("inference-endpoint-deploy"), {**body, "exposure": "cluster_ip"}).status_code == 404

    # what the cluster's team keeps to itself
    balanced = browser.post(reverse("inference-endpoint-deploy"), {
        "cluster": cluster.pk, "name": "chat", "model": "models/qwen", "gpus": "1", "replicas": "1", "port": "8000",
        "model_source": "shared", "exposure": "internet_lb"})
    assert balanced.status_code == 400 and 'data-error-code="not_on_shared_cluster"' in balanced.content.decode()
    for extra, field in (({"model_source": "fsx", "model": "llama"}, "model_source"),
                         ({"autoscaling": {"min_replicas": 1, "max_replicas": 2}}, "autoscaling")):
        managed = api(guest).post("/api/v1/managed-endpoints", {**body, "cluster": cluster.pk, **extra})
        assert field_codes(managed) == {field: "not_on_shared_cluster"}, managed.content
    assert not Endpoint.objects.exists()

    # a managed endpoint (REST, planned): the team's namespace, queue, priority and prefix
    install_inference_operator(cluster.eks_name, cluster.region)
    planned = api(guest).post("/api/v1/managed-endpoints?dry_run=true", {
        "cluster": cluster.pk, "name": "llama", "model": "models/llama", "priority": "high"})
    assert planned.status_code == 200, planned.content
    config = next(change["detail"]["manifest"] for change in planned.json()["changes"]
                  if change["kind"] == "InferenceEndpointConfig")
    assert config["metadata"]["namespace"] == namespace
    assert (config["metadata"]["labels"][QUEUE], config["metadata"]["labels"][PRIORITY]) == (
        f"{namespace}-localqueue", "high-priority")
    assert config["spec"]["modelSourceConfig"]["modelLocation"] == f"{team_prefix(robotics.slug)}models/llama"

    # a self-managed endpoint through the portal's deploy page: served from the team's shared claim, in its queue
    s3.put_object(Bucket=ensure_shared_bucket(s3, cluster.region), Key=f"{team_prefix(robotics.slug)}models/qwen/a",
                  Body=b"{}")
    models = api(guest).get(f"/api/v1/clusters/{cluster.pk}/models").json()["models"]
    assert [(model["name"], model["path"]) for model in models] == [("qwen", "/mnt/shared/models/qwen")]
    page = browser.get(reverse("inference-endpoint-deploy")).content.decode()
    assert f"{cluster.name} (shared by {cast.team.name})" in page
    estimate = browser.get(reverse("inference-endpoint-estimate"), {"cluster": cluster.pk, "replicas": "1"})
    assert "≈ $7.09/hour" in estimate.content.decode()
    deployed = browser.post(reverse("inference-endpoint-deploy"), {
        "cluster": cluster.pk, "name": "chat", "model": "models/qwen", "gpus": "1", "replicas": "1", "port": "8000",
        "model_source": "shared", "exposure": "cluster_ip", "priority": "high"})
    endpoint = Endpoint.objects.get()
    assert deployed.status_code == 302 and (endpoint.team, endpoint.namespace) == (robotics, namespace)
    assert drive(endpoint.operation, timeout=60).state == "succeeded", endpoint.operation.error_message
    apps = k8s.AppsV1Api(kube.api_client(cluster.eks_name, region=cluster.region))
    deployment = apps.read_namespaced_deployment("chat", namespace)
    assert deployment.spec.template.metadata.labels[QUEUE] == f"{namespace}-localqueue"
    assert deployment.spec.template.metadata.labels[PRIORITY] == "high-priority"
    assert deployment.spec.template.spec.volumes[0].persistent_volume_claim.claim_name == "shared"
    shown = api(guest).get(f"/api/v1/endpoints/{endpoint.pk}").json()
    assert shown["state"] == "ready" and shown["url"] == f"http://chat.{namespace}.svc.cluster.local/v1"
    assert api(guest).get(f"/api/v1/endpoints/{endpoint.pk}/models").status_code == 200
    assert api(cast.admin).get(f"/api/v1/endpoints/{endpoint.pk}").status_code == 404
    assert api(cast.admin).get("/api/v1/endpoints").json()["results"] == []
    keda = api(guest).request("PUT", f"/api/v1/endpoints/{endpoint.pk}/autoscaling", {
        "metric": "waiting_requests", "target": 5, "min_replicas": 1, "max_replicas": 2})
    assert field_codes(keda) == {"non_field_errors": "not_on_shared_cluster"}, keda.content
    in_use = admin.post(f"/api/v1/clusters/{cluster.pk}/delete", {"confirm": cluster.name})
    assert in_use.json()["code"] == "cluster_in_use", in_use.content
    assert f"inference endpoint chat (ready) of team {robotics.name}" in in_use.json()["message"]

    deleting = api(guest).post(f"/api/v1/endpoints/{endpoint.pk}/delete")
    assert deleting.status_code == 202, deleting.content
    assert drive(Operation.objects.get(pk=deleting.json()["operation"]["id"]), timeout=30).state == "succeeded"
    endpoint.refresh_from_db()
    assert endpoint.state == "deleted" and not apps.list_namespaced_deployment(namespace).items
