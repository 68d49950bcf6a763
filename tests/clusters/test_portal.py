"""The clusters portal through Django's test client: the list (badges, counts, the active cluster, live feeds, query
count), the detail page's sections and buttons per role, another team's cluster as 404, the create wizard against
the sandbox (choices only from inspection, field error codes next to their fields, the create itself), delete with
typed confirmation (mismatch, forget an imported cluster, delete a created one), storage volumes and the import
flow."""

from __future__ import annotations

import html
import re
import time

import boto3
import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts import services as account_services
from clusters.inspection.catalog import name_order
from clusters.models import (
    ActiveCluster,
    Cluster,
    ClusterDependency,
    ClusterState,
    NetworkPlan,
    Subnet,
)
from config.context import Source
from operations.models import Operation
from tests import factories
from tests.clusters.sandbox import role_for

pytestmark = pytest.mark.django_db

REGION = "us-west-2"


def login(user, *, team=None) -> Client:
    if team is not None:
        account_services.user_switch_team(actor=user, team=team, source=Source.SYSTEM)
    client = Client()
    client.force_login(user)
    return client


def text(response) -> str:
    return html.unescape(response.content.decode())


def plain(page: str) -> str:
    """The page's text without tags, whitespace collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", page).split())


def rows(response) -> list[int]:
    return [int(pk) for pk in re.findall(r'data-cluster-row="(\d+)"', response.content.decode())]


def row(response, cluster: Cluster) -> str:
    return re.search(rf'<tr data-cluster-row="{cluster.pk}">.*?</tr>', text(response), re.S).group(0)


def field_error(response, code: str) -> bool:
    """The code is shown as a field error (``components/field_errors.html``), not only in the page's alert."""
    return f'class="field-error" data-error-code="{code}"' in response.content.decode()


def has_form(response, url_name: str, *args) -> bool:
    return f'action="{reverse(url_name, args=args)}' in response.content.decode()


# --- the list -------------------------------------------------------------------------------------------------------


def test_the_list_shows_state_region_origin_counts_team_and_the_active_cluster(cast, make_cluster):
    alpha = make_cluster("alpha", state=ClusterState.ACTIVE)
    Cluster.objects.filter(pk=alpha.pk).update(node_count=4, gpu_count=16)
    beta = make_cluster("beta", state=ClusterState.CREATING)
    imported = make_cluster("gamma", state=ClusterState.FAILED, origin="imported")
    make_cluster("gone", state=ClusterState.DELETED)
    theirs = make_cluster("theirs", team=cast.outsider.memberships.get().team)
    ActiveCluster.objects.create(user=cast.viewer, team=cast.team, cluster=alpha)

    response = login(cast.viewer, team=cast.team).get(reverse("clusters"))
    assert response.status_code == 200
    assert rows(response) == [alpha.pk, beta.pk, imported.pk]
    first = row(response, alpha)
    assert "badge-cluster-active" in first and "Your active cluster" in first
    assert '<td class="num" data-field="node_count">4</td>' in first
    assert '<td class="num" data-field="gpu_count">16</td>' in first
    assert "ml.g5.8xlarge × 1" in first and REGION in first and "Vision" in first
    assert "Make active" not in first
    assert "badge-cluster-creating" in row(response, beta) and "Make active" in row(response, beta)
    assert "Imported" in row(response, imported) and "badge-cluster-failed" in row(response, imported)
    assert theirs.pk not in rows(response)
    assert f'data-live-teams="{cast.team.pk}"' in response.content.decode()
    assert not has_form(response, "cluster-create") and 'data-testid="cluster-new"' not in text(response)


@pytest.mark.parametrize(("role", "create", "imports"), [("admin", True, True), ("operator", False, False),
                                                         ("viewer", False, False)])
def test_create_and_import_buttons_follow_the_role(cast, role, create, imports):
    page = text(login(cast[role], team=cast.team).get(reverse("clusters")))
    assert ('data-testid="cluster-new"' in page) is create
    assert ('data-testid="cluster-import"' in page) is imports


def test_make_active_from_the_list_changes_only_my_choice(cast, make_cluster):
    alpha, beta = make_cluster("alpha", state=ClusterState.ACTIVE), make_cluster("beta", state=ClusterState.ACTIVE)
    ActiveCluster.objects.create(user=cast.admin, team=cast.team, cluster=alpha)
    client = login(cast.viewer, team=cast.team)

    response = client.post(reverse("cluster-activate", args=[beta.pk]), {"next": reverse("clusters")})
    assert response.status_code == 302 and response.url == reverse("clusters")
    assert ActiveCluster.objects.get(user=cast.viewer).cluster == beta
    assert ActiveCluster.objects.get(user=cast.admin).cluster == alpha
    assert "Your active cluster" in row(client.get(reverse("clusters")), beta)


def test_the_list_query_count_does_not_grow_with_clusters(cast, make_cluster):
    client = login(cast.viewer, team=cast.team)
    for index in range(2):
        make_cluster(f"few{index}", state=ClusterState.ACTIVE)
    ActiveCluster.objects.create(user=cast.viewer, team=cast.team, cluster=Cluster.objects.first())
    with CaptureQueriesContext(connection) as few:
        assert len(rows(client.get(reverse("clusters")))) == 2
    for index in range(18):
        make_cluster(f"many{index}", state=ClusterState.CREATING)
    with CaptureQueriesContext(connection) as many:
        assert len(rows(client.get(reverse("clusters")))) == 20
    assert len(few) == len(many) <= 12


# --- the detail page ------------------------------------------------------------------------------------------------


def _furnish(cluster: Cluster) -> None:
    network = NetworkPlan.objects.create(cluster=cluster, vpc_id="vpc-0abc", vpc_cidr="10.42.0.0/16",
                                         internet_gateway_id="igw-1", nat_gateway_id="nat-1",
                                         route_tables={"public": "rtb-pub", "private": "rtb-priv"},
                                         security_groups={"cluster": "sg-c", "efa": "sg-efa"},
                                         endpoints={"s3": "vpce-s3"})
    Subnet.objects.create(network=network, subnet_id="subnet-pub-a", role="public", zone="us-west-2a",
                          zone_id="usw2-az1", cidr="10.42.0.0/24")
    Subnet.objects.create(network=network, subnet_id="subnet-cmp-a", role="compute", zone="us-west-2a",
                          zone_id="usw2-az1", cidr="10.42.16.0/20")
    ClusterDependency.objects.create(cluster=cluster, component="cert-manager", kind="addon", observed_state="active",
                                     version="v1.15.0-eksbuild.1")
    ClusterDependency.objects.create(cluster=cluster, component="kuberay-operator", kind="manifest",
                                     observed_state="failed", last_error="CRD rejected")
    factories.storage_volume(cluster, state="available", shared=True, bucket="instantstart-shared")
    Cluster.objects.filter(pk=cluster.pk).update(
        eks_arn="arn:aws:eks:us-west-2:123456789012:cluster/alpha", kubernetes_version="1.31",
        hyperpod_name="alpha", hyperpod_status="InService", node_recovery="Automatic",
        drift=[{"field": "kubernetes_version", "recorded": "1.30", "actual": "1.31"}])


def test_detail_shows_overview_drift_network_dependencies_storage_and_operations(cast, make_cluster):
    from operations.services import operation_start

    cluster = make_cluster("alpha", state=ClusterState.ACTIVE)
    _furnish(cluster)
    operation, _ = operation_start(actor=cast.admin, team=cast.team, kind="cluster.create",
                                   title="Create cluster alpha", params={"cluster_id": cluster.pk, "region": REGION},
                                   source=Source.PORTAL, target=cluster)

    response = login(cast.viewer).get(reverse("cluster-detail", args=[cluster.pk]))
    page = text(response)
    assert response.status_code == 200
    assert "arn:aws:eks:us-west-2:123456789012:cluster/alpha" in page and "Automatic" in page
    drift = re.search(r'data-testid="drift">.*?</table>', page, re.S).group(0)
    assert "kubernetes_version" in drift and "1.30" in drift and "1.31" in drift
    assert "vpc-0abc" in page and "10.42.0.0/16" in page and "rtb-priv" in page and "sg-efa" in page
    assert "vpce-s3" in page and "subnet-cmp-a" in page and "Compute (/20 per zone)" in page
    assert re.search(r'data-dependency="cert-manager".*?badge-dep-active.*?v1.15.0-eksbuild.1', page, re.S)
    assert re.search(r'data-dependency="kuberay-operator".*?CRD rejected.*?badge-dep-failed', page, re.S)
    assert re.search(r'data-volume="shared".*?s3://instantstart-shared/', page, re.S)
    assert f'data-operation-progress="{operation.pk}"' in page
    assert page.count('<li class="phase phase-pending"') == 7
    assert 'data-testid="phase-state-network"' in page and 'data-testid="phase-state-storage"' in page
    assert f'data-cluster-operation="{operation.pk}"' in page
    assert "/static/js/operation-progress.js" in page and "/static/js/cluster-live.js" in page


@pytest.mark.parametrize(("role", "refresh", "delete", "storage"), [
    ("admin", True, True, True), ("operator", True, False, True), ("viewer", False, False, False),
    ("superuser", True, True, True),
])
def test_detail_buttons_follow_the_role(cast, make_cluster, role, refresh, delete, storage):
    cluster = make_cluster("alpha", state=ClusterState.ACTIVE)
    _furnish(cluster)
    volume = cluster.volumes.get()
    response = login(cast[role]).get(reverse("cluster-detail", args=[cluster.pk]))
    assert response.status_code == 200
    assert has_form(response, "cluster-activate", cluster.pk)
    assert has_form(response, "cluster-refresh", cluster.pk) is refresh
    assert ('data-testid="cluster-delete"' in text(response)) is delete
    assert has_form(response, "cluster-volume-create", cluster.pk) is storage
    assert has_form(response, "cluster-volume-delete", cluster.pk, volume.pk) is storage


def test_the_detail_query_count_does_not_grow_with_its_parts(cast, make_cluster):
    from operations.services import operation_start

    cluster = make_cluster("alpha", state=ClusterState.ACTIVE)
    _furnish(cluster)
    client = login(cast.operator)
    url = reverse("cluster-detail", args=[cluster.pk])

    def add_parts(index: int) -> None:
        ClusterDependency.objects.create(cluster=cluster, component=f"addon-{index}", kind="addon")
        factories.storage_volume(cluster, f"v{index}", bucket="b")
        operation_start(actor=cast.admin, team=cast.team, kind="cluster.create", title=f"Create {index}",
                        params={"cluster_id": cluster.pk, "region": REGION}, source=Source.API, target=cluster)

    add_parts(0)
    with CaptureQueriesContext(connection) as few:
        assert client.get(url).content.decode().count("data-cluster-operation=") == 1
    for index in range(1, 6):
        add_parts(index)
    with CaptureQueriesContext(connection) as many:
        assert client.get(url).content.decode().count("data-cluster-operation=") == 6
    assert len(few) == len(many) <= 20


def test_refresh_errors_are_flashed_with_their_code(cast, make_cluster):
    cluster = make_cluster("alpha", state=ClusterState.DELETED)
    client = login(cast.operator)
    response = client.post(reverse("cluster-refresh", args=[cluster.pk]))
    assert response.status_code == 302
    page = client.get(response.url)
    assert 'data-error-code="cluster_deleted"' in page.content.decode()
    assert not has_form(page, "cluster-refresh", cluster.pk), "a deleted cluster offers no actions"


def test_a_deleted_cluster_shows_its_history_and_no_controls_and_stays_listed_behind_a_filter(cast, make_cluster):
    from operations.services import operation_start

    cluster = make_cluster("gone", state=ClusterState.DELETED)
    Cluster.objects.filter(pk=cluster.pk).update(hyperpod_name="gone-hp")
    factories.instance_group(cluster, "workers", status="InService")
    operation_start(actor=cast.admin, team=cast.team, kind="cluster.delete", title="Delete cluster gone",
                    params={"cluster_id": cluster.pk}, source=Source.PORTAL, target=cluster)
    client = login(cast.admin, team=cast.team)

    page = client.get(reverse("cluster-detail", args=[cluster.pk]))
    body = text(page)
    assert page.status_code == 200 and 'data-testid="cluster-deleted"' in body and "badge-cluster-deleted" in body
    assert "cluster-operations" in body and "Delete cluster gone" in body
    for control in ("group-edit-workers", "group-delete-workers", "cluster-nodes-link", "group-add", "cluster-delete",
                    "cluster-refresh", "volume-add"):
        assert f'data-testid="{control}"' not in body, control
    assert "InService" not in body

    nodes = client.get(reverse("cluster-nodes", args=[cluster.pk]))
    assert nodes.status_code == 302 and nodes.url == reverse("cluster-detail", args=[cluster.pk])
    assert "gone is deleted: it has no nodes any more" in text(client.get(nodes.url))

    current = client.get(reverse("clusters"))
    assert rows(current) == [] and "1 deleted cluster kept as history" in text(current)
    assert rows(client.get(reverse("clusters") + "?show=deleted")) == [cluster.pk]


def test_another_teams_cluster_is_not_found_everywhere(cast, make_cluster):
    cluster = make_cluster("alpha", state=ClusterState.ACTIVE)
    _furnish(cluster)
    volume = cluster.volumes.get()
    client = login(cast.outsider)
    assert client.get(reverse("cluster-detail", args=[cluster.pk])).status_code == 404
    assert client.get(reverse("cluster-delete", args=[cluster.pk])).status_code == 404
    for name, args in [("cluster-activate", [cluster.pk]), ("cluster-refresh", [cluster.pk]),
                       ("cluster-delete", [cluster.pk]), ("cluster-volume-create", [cluster.pk]),
                       ("cluster-volume-delete", [cluster.pk, volume.pk])]:
        assert client.post(reverse(name, args=args), {"confirm": "alpha", "name": "x", "kind": "s3"}).status_code \
            == 404, name
    assert cluster.pk not in rows(client.get(reverse("clusters"), {"team": "all"}))
    assert not ActiveCluster.objects.exists() and Cluster.objects.get().state == ClusterState.ACTIVE


def test_operators_get_403_for_admin_actions(cast, make_cluster):
    cluster = make_cluster("alpha", state=ClusterState.ACTIVE)
    client = login(cast.operator, team=cast.team)
    assert client.get(reverse("cluster-delete", args=[cluster.pk])).status_code == 403
    assert client.post(reverse("cluster-create")).status_code == 403
    assert client.get(reverse("cluster-import")).status_code == 403


def test_an_operator_opening_the_wizard_is_told_who_creates_clusters(cast):
    for team in (cast.team, None):
        client = login(cast.operator, team=team)
        response = client.get(reverse("cluster-create"), follow=True)
        assert response.redirect_chain == [(reverse("clusters"), 302)]
        assert "Only team admins create clusters: ask one of your team's admins" in text(response)


# --- delete -------------------------------------------------------------------------------------------------------


def test_delete_with_a_mismatched_name_shows_the_code_next_to_the_field(cast, make_cluster):
    cluster = make_cluster("alpha", state=ClusterState.ACTIVE)
    client = login(cast.admin)
    page = client.get(reverse("cluster-delete", args=[cluster.pk]))
    assert page.status_code == 200 and 'name="confirm"' in page.content.decode()
    assert 'name="delete_resources"' not in page.content.decode(), "only imported clusters offer the choice"

    response = client.post(reverse("cluster-delete", args=[cluster.pk]), {"confirm": "alpah"})
    assert response.status_code == 400
    assert field_error(response, "confirmation_mismatch")
    assert 'value="alpah"' in response.content.decode()
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.ACTIVE and not Operation.objects.exists()


def test_deleting_a_created_cluster_starts_the_delete_operation(cast, make_cluster):
    cluster = make_cluster("alpha", state=ClusterState.ACTIVE)
    response = login(cast.admin).post(reverse("cluster-delete", args=[cluster.pk]), {"confirm": "alpha"})
    assert response.status_code == 302 and response.url == reverse("cluster-detail", args=[cluster.pk])
    cluster.refresh_from_db()
    operation = Operation.objects.get()
    assert (cluster.state, operation.kind, operation.source) == (ClusterState.DELETING, "cluster.delete", "portal")


def test_an_imported_cluster_is_forgotten_unless_asked_to_delete_its_resources(cast, make_cluster):
    forgotten = make_cluster("kept", state=ClusterState.ACTIVE, origin="imported")
    client = login(cast.admin)
    page = client.get(reverse("cluster-delete", args=[forgotten.pk])).content.decode()
    assert 'name="delete_resources"' not in page and "only a platform admin can delete them" in page
    response = client.post(reverse("cluster-delete", args=[forgotten.pk]), {"confirm": "kept"})
    assert response.status_code == 302 and response.url == reverse("clusters")
    forgotten.refresh_from_db()
    assert forgotten.state == ClusterState.DELETED and not Operation.objects.exists()
    assert "was forgotten" in text(client.get(reverse("clusters")))

    deleted = make_cluster("gone", state=ClusterState.ACTIVE, origin="imported")
    platform_admin = login(cast.superuser)
    assert 'name="delete_resources"' in text(platform_admin.get(reverse("cluster-delete", args=[deleted.pk])))
    response = platform_admin.post(reverse("cluster-delete", args=[deleted.pk]),
                                   {"confirm": "gone", "delete_resources": "true"})
    assert response.status_code == 302
    operation = Operation.objects.get()
    assert operation.params["imported"] is True and operation.kind == "cluster.delete"


# --- storage ------------------------------------------------------------------------------------------------------


def test_adding_a_volume_validates_like_rest_and_starts_an_operation(cast, make_cluster):
    cluster = make_cluster("alpha", state=ClusterState.ACTIVE)
    client = login(cast.operator)
    bad = client.post(reverse("cluster-volume-create", args=[cluster.pk]),
                      {"name": "Bad_Name", "kind": "fsx", "capacity_gib": "1000"})
    assert bad.status_code == 400
    assert field_error(bad, "invalid_volume_name") and field_error(bad, "invalid_capacity")
    assert 'value="Bad_Name"' in bad.content.decode()

    good = client.post(reverse("cluster-volume-create", args=[cluster.pk]),
                       {"name": "datasets", "kind": "s3", "bucket": "my-datasets", "prefix": "", "capacity_gib": ""})
    assert good.status_code == 302
    volume = cluster.volumes.get(name="datasets")
    assert (volume.bucket, volume.state) == ("my-datasets", "creating")
    assert Operation.objects.get(target_type="storagevolume").source == "portal"


def test_volume_errors_that_are_not_a_fields_are_shown_with_their_code(cast, make_cluster):
    cluster = make_cluster("alpha", state=ClusterState.CREATING)
    response = login(cast.admin).post(reverse("cluster-volume-create", args=[cluster.pk]),
                                      {"name": "datasets", "kind": "s3", "bucket": "my-datasets"})
    assert response.status_code == 409
    assert 'data-error-code="cluster_not_active"' in response.content.decode()


# --- the create wizard (against the sandbox) ------------------------------------------------------------------------


def _zone_names() -> list[str]:
    return [zone["ZoneName"] for zone in boto3.client("ec2", region_name=REGION).describe_availability_zones()[
        "AvailabilityZones"]]


def test_the_wizard_offers_only_what_inspection_returned(cast, sandbox):
    client = login(cast.admin, team=cast.team)
    page = client.get(reverse("cluster-create"))
    assert page.status_code == 200
    assert f'<option value="{REGION}" selected' in page.content.decode(), "the deployment's region is preset"
    assert 'name="zone"' in page.content.decode() and 'name="instance_type"' not in page.content.decode()

    zones = client.get(reverse("cluster-wizard-step", args=["zone"]), {"region": REGION})
    offered = re.findall(r'name="zone" value="([^"]+)"', zones.content.decode())
    assert offered == sorted(_zone_names())
    assert 'id="step-type" hx-swap-oob="true"' in zones.content.decode(), "later steps are emptied"

    types = client.get(reverse("cluster-wizard-step", args=["type"]), {"region": REGION, "zone": offered[0]})
    names = re.findall(r'name="instance_type" value="([^"]+)"', types.content.decode())
    from clusters import inspection

    assert sorted(names, key=name_order) == [offer.name for offer in inspection.instance_types(REGION, offered[0])]
    assert "ml.g5.8xlarge" in names and all(name.startswith("ml.") for name in names)
    assert re.search(r'value="ml.p5.48xlarge".*?8 × NVIDIA H100.*?EFA', text(types), re.S) or \
        "ml.p5.48xlarge" not in names

    capacity = client.get(reverse("cluster-wizard-step", args=["capacity"]),
                          {"region": REGION, "zone": offered[0], "instance_type": "ml.g5.8xlarge"})
    assert "ml.g5.8xlarge for cluster usage" in text(capacity) and "<strong>8</strong>" in text(capacity)
    assert re.search(r'name="capacity_type" value="training-plan"[^>]* disabled', capacity.content.decode())

    elsewhere = client.get(reverse("cluster-wizard-step", args=["type"]), {"region": REGION, "zone": "mars-1a"})
    assert 'name="instance_type"' not in elsewhere.content.decode()


def test_a_training_plan_of_the_type_is_offered_and_its_zone_wins(cast, sandbox):
    plan = sandbox.control("POST", "training-plans", {
        "region": REGION, "name": "p5-reserved", "instance_type": "ml.p5.48xlarge", "instance_count": 2,
        "availability_zone": "us-west-2b"})["training_plans"][0]
    client = login(cast.admin, team=cast.team)
    answers = {"region": REGION, "zone": "us-west-2a", "instance_type": "ml.p5.48xlarge"}

    on_demand = client.get(reverse("cluster-wizard-step", args=["capacity"]), answers)
    assert not re.search(r'name="capacity_type" value="training-plan"[^>]* disabled', on_demand.content.decode())
    assert 'name="training_plan_arn"' not in on_demand.content.decode()

    chosen = {**answers, "capacity_type": "training-plan", "training_plan_arn": plan["arn"]}
    capacity = text(client.get(reverse("cluster-wizard-step", args=["capacity"]), chosen))
    assert re.findall(r'name="training_plan_arn" value="([^"]+)"', capacity) == [plan["arn"]]
    assert "zone us-west-2b · 2 of 2 available" in plain(capacity)
    note = plain(re.search(r'data-testid="training-plan-note">(.*?)</p>', capacity, re.S).group(1))
    assert "zone and capacity win" in note and "us-west-2b" in note and "us-west-2a" in note

    review = text(client.get(reverse("cluster-wizard-step", args=["review"]),
                             {**chosen, "name": "reserved", "instance_count": "2"}))
    assert "us-west-2b (the training plan's; you chose us-west-2a)" in plain(review) and "p5-reserved" in review


def test_the_review_validates_like_rest(cast, sandbox):
    client = login(cast.admin, team=cast.team)
    zone = sorted(_zone_names())[0]
    answers = {"name": "bad_name", "region": REGION, "zone": zone, "instance_type": "ml.g5.8xlarge",
               "instance_count": "0", "capacity_type": "on-demand"}
    review = client.get(reverse("cluster-wizard-step", args=["review"]), answers)
    assert 'data-error-code="invalid_cluster_name"' in review.content.decode()
    assert 'data-error-code="invalid_count"' in review.content.decode()
    assert 'data-testid="cluster-create-submit"' not in review.content.decode()

    fine = client.get(reverse("cluster-wizard-step", args=["review"]), {**answers, "name": "vision-1",
                                                                         "instance_count": "2"})
    assert 'data-testid="cluster-create-submit"' in fine.content.decode()
    assert "ml.g5.8xlarge</span> × 2" in text(fine)

    without_javascript = client.get(reverse("cluster-create"), {**answers, "name": "vision-1", "instance_count": "2",
                                                                "review": "1"})
    page = without_javascript.content.decode()
    assert all(f'id="step-{step}-title"' in page for step in ("region", "zone", "type", "capacity", "review"))
    assert 'hx-swap-oob' not in page and 'data-testid="cluster-create-submit"' in page
    assert re.search(rf'name="zone" value="{zone}" data-wizard checked', page)


def test_wizard_bad_input_shows_each_field_error_code_next_to_its_field(cast, sandbox):
    client = login(cast.admin, team=cast.team)
    zone = sorted(_zone_names())[0]
    answers = {"team": str(cast.team.pk), "name": "vision-1", "region": REGION, "zone": zone,
               "instance_type": "ml.g5.8xlarge", "instance_count": "0", "capacity_type": "on-demand"}

    shape = client.post(reverse("cluster-create"), answers)
    assert shape.status_code == 400
    assert field_error(shape, "invalid_count")
    assert 'name="instance_count"' in shape.content.decode() and 'value="0"' in shape.content.decode()

    quota = client.post(reverse("cluster-create"), {**answers, "instance_count": "9"})
    assert quota.status_code == 400
    assert field_error(quota, "quota_exceeded")
    assert "is 8" in text(quota) and "requested 9" in text(quota)

    unknown_zone = client.post(reverse("cluster-create"), {**answers, "zone": "us-west-2z", "instance_count": "1"})
    assert unknown_zone.status_code == 400
    assert 'data-error-code="unknown_zone"' in unknown_zone.content.decode()
    assert not Cluster.objects.exists() and not Operation.objects.exists()


def test_the_wizard_creates_the_cluster_and_opens_its_page(cast, sandbox):
    client = login(cast.admin, team=cast.team)
    zone = sorted(_zone_names())[0]
    response = client.post(reverse("cluster-create"), {
        "team": str(cast.team.pk), "name": "vision-1", "region": REGION, "zone": zone,
        "instance_type": "ml.g5.8xlarge", "instance_count": "2", "capacity_type": "on-demand",
        "fsx_capacity_gib": "", "deep_health_checks": "true"})
    cluster = Cluster.objects.get()
    assert response.status_code == 302 and response.url == reverse("cluster-detail", args=[cluster.pk])
    assert (cluster.state, cluster.spec["instance_count"], cluster.spec["deep_health_checks"]) == \
        (ClusterState.CREATING, 2, True)
    operation = Operation.objects.get()
    assert (operation.kind, operation.source, operation.created_by) == ("cluster.create", "portal", cast.admin)
    page = client.get(response.url)
    assert f'data-operation-progress="{operation.pk}"' in page.content.decode()
    assert "Create cluster vision-1 started." in text(page)


# --- import -------------------------------------------------------------------------------------------------------


def _eks_cluster(name: str) -> None:
    """An EKS cluster made directly in the sandbox (not by InstantStart), once it is ACTIVE."""
    ec2 = boto3.client("ec2", region_name=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.9.0.0/16")["Vpc"]["VpcId"]
    subnets = [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.9.{index}.0/24",
                                 AvailabilityZone=zone)["Subnet"]["SubnetId"]
               for index, zone in enumerate(sorted(_zone_names())[:2])]
    eks = boto3.client("eks", region_name=REGION)
    eks.create_cluster(name=name, roleArn=role_for("eks"),
                       resourcesVpcConfig={"subnetIds": subnets},
                       accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})
    deadline = time.monotonic() + 30
    while eks.describe_cluster(name=name)["cluster"]["status"] != "ACTIVE":
        assert time.monotonic() < deadline, f"EKS cluster {name} did not become ACTIVE in the sandbox"
        time.sleep(0.1)


@pytest.mark.usefixtures("import_allowed")
def test_import_lists_candidates_with_tracked_ones_disabled(cast, sandbox, make_cluster):
    _eks_cluster("legacy")
    _eks_cluster("known")
    make_cluster("known", state=ClusterState.ACTIVE, origin="imported")
    client = login(cast.admin, team=cast.team)

    candidates = client.get(reverse("cluster-import-candidates"), {"region": REGION})
    page = candidates.content.decode()
    assert candidates.status_code == 200
    assert re.search(r'name="eks_name" value="legacy">', page)
    assert re.search(r'name="eks_name" value="known" disabled', page)
    assert "already managed by your team" in page

    response = client.post(reverse("cluster-import"), {"team": str(cast.team.pk), "region": REGION,
                                                       "eks_name": "known"})
    assert response.status_code == 400 and field_error(response, "cluster_already_tracked")

    response = client.post(reverse("cluster-import"), {"team": str(cast.team.pk), "region": REGION,
                                                       "eks_name": "legacy"})
    assert response.status_code == 302, re.findall(r'data-error-code="([^"]+)"', response.content.decode())
    cluster = Cluster.objects.get(name="legacy")
    assert response.url == reverse("cluster-detail", args=[cluster.pk])
    assert cluster.state == ClusterState.IMPORTING and Operation.objects.get().kind == "cluster.import"


def test_deleting_a_cluster_that_still_runs_work_is_refused_with_the_list(cast, make_cluster):
    from clusters import usage

    cluster = make_cluster("alpha", state=ClusterState.ACTIVE)

    def running(found: Cluster) -> list[str]:
        return ["training job llama-sft (running)"] if found.pk == cluster.pk else []

    usage.register_workload_source(running)
    try:
        response = login(cast.admin).post(reverse("cluster-delete", args=[cluster.pk]), {"confirm": "alpha"})
    finally:
        usage.unregister_workload_source(running)
    assert response.status_code == 409
    assert 'data-error-code="cluster_in_use"' in response.content.decode()
    assert "training job llama-sft (running)" in text(response)
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.ACTIVE and not Operation.objects.exists()


def test_the_wizard_previews_the_plan_and_creates_nothing(cast, sandbox):
    client = login(cast.admin, team=cast.team)
    zone = sorted(_zone_names())[0]
    response = client.post(reverse("cluster-create"), {
        "team": str(cast.team.pk), "name": "vision-1", "region": REGION, "zone": zone,
        "instance_type": "ml.g5.8xlarge", "instance_count": "2", "capacity_type": "on-demand", "preview": "1"})
    assert response.status_code == 200
    plan = plain(re.search(r'data-testid="cluster-create-preview-plan">(.*?)</div>', text(response), re.S).group(1))
    assert plan.startswith("DRY RUN, nothing was changed.")
    assert "create aws EKS cluster vision-1" in plan and "create aws SageMaker HyperPod cluster vision-1" in plan
    assert 'data-testid="cluster-create-submit"' in response.content.decode()
    assert not Cluster.objects.exists() and not Operation.objects.exists()
