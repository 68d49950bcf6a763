"""The clusters list and a cluster's detail page, with the actions they carry: make active, refresh, delete.

Both pages follow the team feeds (``static/js/cluster-live.js``): a change of a cluster operation or a cluster
audit event re-reads the page and swaps its live regions, so state badges move without a reload; the detail page's
progress panel follows its operation on its own socket (``static/js/operation-progress.js``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.core.exceptions import ObjectDoesNotExist
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import access
from accounts.requests import PortalRequest
from accounts.selectors import team_list
from clusters import actions, selectors, services, state_rules
from clusters.api.group_serializers import GROUP_ACTIONS
from clusters.api.serializers import VOLUME_ACTIONS, ClusterDeleteSerializer, VolumeCreateSerializer
from clusters.features import leftovers
from clusters.inspection import catalog
from clusters.models import Cluster, ClusterOrigin, ClusterState, InterfaceMode, StorageKind
from clusters.ownership import iam_name
from config.errors import CloudError
from operations import selectors as operation_selectors
from operations.models import ACTIVE_STATES
from portal.forms import SerializerForm
from portal.views import MAX_LIVE_TEAMS, act, flash_error, next_url, perform, portal_view, template_capabilities

ALL_TEAMS = "all"
#: ``?show=`` of the clusters list that lists the deleted clusters (history) instead of the current ones.
SHOW_DELETED = "deleted"
#: Most operations the detail page lists (the operations page has them all).
RECENT_OPERATIONS = 10
CLUSTER_ACTIONS = [actions.CLUSTER_ACTIVATE, actions.CLUSTER_REFRESH, actions.CLUSTER_DELETE, actions.STORAGE_CREATE,
                   actions.INSTANCE_GROUP_CREATE]


def _with_capabilities(actor: Any, rows: list[Any], names: list[str],
                       state_allows: Callable[[str, Any], bool]) -> list[Any]:
    """``rows``, each with ``caps``: what the actor may do with it now (permission and state), by template name."""
    for row in rows:
        row.caps = template_capabilities(access.capabilities(actor, row, names, state_allows))
    return rows


@portal_view
def cluster_list(request: PortalRequest) -> HttpResponse:
    """The current team's clusters (``?team=all``: every team of the user; ``?team=<id>``: that team), with the
    user's active cluster of each team marked; ``?show=deleted``: the deleted ones instead, kept as history.
    Queries: a fixed number plus one per team shown."""
    teams = list(team_list(actor=request.user).order_by("name"))
    scope = request.GET.get("team") or (str(request.team.pk) if request.team else ALL_TEAMS)
    shown = [team for team in teams if scope == ALL_TEAMS or str(team.pk) == scope]
    show_deleted = request.GET.get("show") == SHOW_DELETED
    every = selectors.cluster_list(actor=request.user, include_deleted=True).filter(team__in=shown)
    deleted = every.filter(state=ClusterState.DELETED)
    clusters = list((deleted if show_deleted else every.exclude(state=ClusterState.DELETED))
                    .order_by("team__name", "name"))
    active = {team.pk: selectors.active_cluster(actor=request.user, team=team)
              for team in {cluster.team for cluster in clusters}}
    active_ids = {cluster.pk for cluster in active.values() if cluster is not None}
    for cluster in _with_capabilities(request.user, clusters, [actions.CLUSTER_ACTIVATE], state_rules.cluster_allows):
        cluster.is_active_choice = cluster.pk in active_ids
    current = request.team if request.team in shown else (shown[0] if len(shown) == 1 else None)
    return render(request, "clusters/list.html", {
        "section": "clusters", "clusters": clusters, "teams": teams, "scope": scope, "current": current,
        "show_deleted": show_deleted, "deleted_count": 0 if show_deleted or clusters else deleted.count(),
        "can_create": current is not None and access.can(request.user, actions.CLUSTER_CREATE, current),
        "can_import": current is not None and access.can(request.user, actions.CLUSTER_IMPORT, current),
        "live_teams": ",".join(str(team.pk) for team in shown[:MAX_LIVE_TEAMS]),
    })


#: What a standard-mode group's network is when its instance type has no EFA: ENA alone.
ENA_ONLY_LABEL = "Standard (ENA; this type has no EFA)"


def _with_network_labels(cluster: Cluster, groups: list[Any]) -> list[Any]:
    """``groups``, each with ``network_label``: its interface mode as the instance type makes it — a standard group of
    a type without EFA (``ml.g5.2xlarge``) is ENA only, not "EFA with ENA". The EFA facts come from the region's
    instance-type catalog (kept in process); when it cannot be read the mode's own label is shown."""
    try:
        offers = catalog.catalog(cluster.region) if groups else {}
    except CloudError:
        offers = {}
    for group in groups:
        offer = offers.get(group.instance_type)
        without_efa = offer is not None and not offer.efa_supported and group.interface_mode == InterfaceMode.STANDARD
        group.network_label = ENA_ONLY_LABEL if without_efa else group.get_interface_mode_display()
    return groups


def _network(cluster: Cluster):
    try:
        network = cluster.network
    except ObjectDoesNotExist:
        return None, []
    return network, list(network.subnets.all())


def _render_detail(request: PortalRequest, cluster: Cluster, *, volume_form: SerializerForm | None = None,
                   status: int = 200) -> HttpResponse:
    operations = list(operation_selectors.with_phases(
        selectors.cluster_operations(actor=request.user, cluster=cluster))[:RECENT_OPERATIONS])
    if cluster.state == ClusterState.DELETED:
        return render(request, "clusters/deleted.html", {
            "section": "clusters", "cluster": cluster, "operations": operations}, status=status)
    current = next((operation for operation in operations if operation.state in ACTIVE_STATES),
                   operations[0] if operations else None)
    network, subnets = _network(cluster)
    active = selectors.active_cluster(actor=request.user, team=cluster.team_id)
    return render(request, "clusters/detail.html", {
        "section": "clusters", "cluster": cluster, "network": network, "subnets": subnets,
        "dependencies": list(selectors.dependency_list(cluster=cluster)),
        "volumes": _with_capabilities(request.user, list(selectors.volume_list(actor=request.user, cluster=cluster)),
                                      VOLUME_ACTIONS, state_rules.volume_allows),
        "groups": _with_network_labels(cluster, _with_capabilities(
            request.user, list(selectors.group_list(actor=request.user, cluster=cluster)), GROUP_ACTIONS,
            state_rules.group_allows)),
        "operations": operations, "current_operation": current,
        "is_active_choice": active is not None and active.pk == cluster.pk,
        "caps": template_capabilities(access.capabilities(request.user, cluster, CLUSTER_ACTIONS,
                                                          state_rules.cluster_allows)),
        "volume_form": volume_form or SerializerForm(VolumeCreateSerializer, initial={"kind": StorageKind.S3}),
        "storage_kinds": StorageKind.choices, "live_teams": str(cluster.team_id),
    }, status=status)


@portal_view
def cluster_detail(request: PortalRequest, cluster_id: int) -> HttpResponse:
    """Overview, drift, network, dependencies, storage and operations of one cluster; 404 for another team's."""
    return _render_detail(request, selectors.cluster_get(actor=request.user, cluster_id=cluster_id))


@require_POST
@portal_view
def cluster_activate(request: PortalRequest, cluster_id: int) -> HttpResponse:
    """Make the cluster the user's active one in its team (``services.active_cluster_set``)."""
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    return act(request, lambda: services.active_cluster_set(actor=request.user, cluster=cluster, source=request.source),
               to=next_url(request, reverse("cluster-detail", args=[cluster.pk])),
               success=f"{cluster.name} is now your active cluster in {cluster.team.name}.")


@require_POST
@portal_view
def cluster_refresh(request: PortalRequest, cluster_id: int) -> HttpResponse:
    """Re-read the cluster from AWS and Kubernetes; the differences found stay on the detail page as drift."""
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    differences, error = perform(lambda: services.cluster_refresh(actor=request.user, cluster=cluster,
                                                                  source=request.source))
    if error:
        flash_error(request, error)
    elif differences:
        count = len(differences)
        messages.warning(request, f"Refreshed {cluster.name}: {count} difference{'s' if count != 1 else ''} "
                                  "from the record.")
    else:
        messages.success(request, f"Refreshed {cluster.name}: it matches the record.")
    return redirect("cluster-detail", cluster_id=cluster.pk)


def _delete_scope(request: PortalRequest, cluster: Cluster) -> dict[str, Any]:
    """What the delete page lists: the instance groups (with their nodes) and volumes the delete removes, the feature
    roles it removes when they exist and carry the cluster's tags, and the shared bucket it keeps."""
    volumes = list(selectors.volume_list(actor=request.user, cluster=cluster))
    return {
        "doomed_groups": list(selectors.group_list(actor=request.user, cluster=cluster)),
        "doomed_volumes": volumes,
        "feature_roles": [iam_name(cluster, purpose) for purpose in leftovers.ROLE_PURPOSES],
        "shared_bucket": next((volume.bucket for volume in volumes if volume.shared and volume.bucket), ""),
    }


@portal_view
def cluster_delete(request: PortalRequest, cluster_id: int) -> HttpResponse:
    """GET asks for the cluster's name (and, for an imported cluster, platform admins whether to delete its cloud
    resources too — off means forget); POST validates with ``ClusterDeleteSerializer`` and calls
    ``services.cluster_delete``."""
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    access.require(request.user, actions.CLUSTER_DELETE, cluster)
    context = {"section": "clusters", "cluster": cluster, "imported": cluster.origin == ClusterOrigin.IMPORTED,
               "may_delete_resources": access.can_administer_platform(request.user), **_delete_scope(request, cluster)}
    if request.method != "POST":
        form = SerializerForm(ClusterDeleteSerializer, initial={"delete_resources": False})
        return render(request, "clusters/delete.html", {**context, "form": form})
    form = SerializerForm(ClusterDeleteSerializer, request.POST)
    deleted = form.submit(lambda **values: services.cluster_delete(
        actor=request.user, cluster=cluster, source=request.source, **values))
    if form.error is not None:
        return render(request, "clusters/delete.html", {**context, "form": form}, status=form.status)
    if deleted is None:
        messages.success(request, f"{cluster.name} was forgotten; its cloud resources were left as they are.")
        return redirect("clusters")
    messages.success(request, f"Deleting {cluster.name}: {deleted.title} started.")
    return redirect("cluster-detail", cluster_id=cluster.pk)


def render_detail_with_volume_errors(request: PortalRequest, cluster: Cluster, form: SerializerForm) -> HttpResponse:
    """The detail page with the add-volume form's errors next to its fields (used by ``storage.volume_create``)."""
    return _render_detail(request, cluster, volume_form=form, status=form.status)

