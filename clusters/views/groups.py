"""Instance groups in the portal: the groups panel of the cluster page (edit dialog, delete) and the add-group page.

The edit dialog follows the explicit-diff contract: ``static/js/cluster-groups.js`` posts only the fields whose value
differs from the one the page was rendered with, and the service compares them with AWS — "No changes" when they
already match.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import access
from accounts.requests import PortalRequest
from clusters import actions, selectors
from clusters.api.group_serializers import InstanceGroupChangeSerializer, InstanceGroupCreateSerializer
from clusters.inspection import capacity, catalog
from clusters.instance_groups import services
from clusters.instance_groups.checks import GroupRequest
from clusters.models import CapacityType, InterfaceMode
from portal.forms import SerializerForm
from portal.views import act, flash_error, portal_view

#: Fields of the add form that mean "the default" when left blank.
OPTIONAL = ("ebs_volume_gib", "threads_per_core", "training_plan_arn", "zone")


def _add_context(request: PortalRequest, cluster, form: SerializerForm) -> dict:
    """The add form's choices: the region's available zones, and the instance types the chosen zone offers (the
    form's zone, else the cluster's; every zone's when neither is set), accelerated ones first."""
    zone = cluster.spec.get("zone", "")
    zones = [found.name for found in catalog.availability_zones(cluster.region) if found.state == "available"]
    chosen = form.values.get("zone") or zone
    return {"section": "clusters", "cluster": cluster, "form": form, "zones": zones,
            "offers": sorted(catalog.instance_types(cluster.region, chosen if chosen in zones else None),
                             key=lambda offer: (offer.accelerator_count == 0, *catalog.name_order(offer.name))),
            "plans": capacity.training_plans(cluster.region), "default_zone": zone,
            "capacity_types": CapacityType.choices, "interface_modes": InterfaceMode.choices}


@portal_view
def group_add(request: PortalRequest, cluster_id: int) -> HttpResponse:
    """GET: the add-group form, its choices read from the region (zones, the types the zone offers with EFA,
    training plans); ``?zone=`` picks the zone (the page re-reads its type list when the zone changes).
    POST: ``services.group_add``; errors come back next to their fields."""
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    access.require(request.user, actions.INSTANCE_GROUP_CREATE, cluster)
    if request.method != "POST":
        form = SerializerForm(InstanceGroupCreateSerializer, initial={
            "zone": request.GET.get("zone") or cluster.spec.get("zone", ""),
            "instance_type": cluster.spec.get("instance_type", ""),
            "instance_count": 1, "capacity_type": CapacityType.ON_DEMAND,
            "interface_mode": InterfaceMode.STANDARD})
        return render(request, "clusters/groups/add.html", _add_context(request, cluster, form))
    form = SerializerForm(InstanceGroupCreateSerializer, request.POST,
                          ignore=[key for key in OPTIONAL if not request.POST.get(key)])
    added = form.submit(lambda **data: services.group_add(actor=request.user, cluster=cluster,
                                                          request=GroupRequest(**data), source=request.source))
    if added is None:
        return render(request, "clusters/groups/add.html", _add_context(request, cluster, form), status=form.status)
    group, _ = added
    messages.success(request, f"Adding group {group.name}: {group.target_count} × {group.instance_type}.")
    return redirect("cluster-detail", cluster_id=cluster.pk)


@require_POST
@portal_view
def group_change(request: PortalRequest, cluster_id: int, name: str) -> HttpResponse:
    """Apply the fields the dialog sent (only the changed ones); "No changes" when AWS already has them."""
    group = selectors.group_get(actor=request.user, cluster_id=cluster_id, name=name)
    form = SerializerForm(InstanceGroupChangeSerializer, request.POST)
    changed = form.submit(lambda **data: services.group_update(actor=request.user, group=group, changes=data,
                                                               source=request.source))
    if form.error is not None:
        flash_error(request, form.error)
    elif changed is None or changed[1] is None:
        messages.info(request, f"No changes: group {group.name} already is as asked.")
    else:
        messages.success(request, f"{changed[1].title} started.")
    return redirect("cluster-detail", cluster_id=cluster_id)


@require_POST
@portal_view
def group_delete(request: PortalRequest, cluster_id: int, name: str) -> HttpResponse:
    group = selectors.group_get(actor=request.user, cluster_id=cluster_id, name=name)
    return act(request, lambda: services.group_delete(actor=request.user, group=group, source=request.source),
               to=reverse("cluster-detail", args=[cluster_id]), success=f"Deleting group {group.name}.")
