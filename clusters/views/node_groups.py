"""EKS node groups in the portal: the node-groups panel of the cluster page (loaded after the page, since it reads
EKS live), its scale dialog and delete button.

The scale dialog follows the explicit-diff contract: ``static/js/cluster-groups.js`` posts only the sizes whose value
differs from the one the panel was rendered with, and the service compares them with EKS — "No changes" when they
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
from clusters import selectors as cluster_selectors
from clusters import state_rules
from clusters.api.node_group_serializers import MAX_NODES, NODE_GROUP_ACTIONS, NodeGroupScaleSerializer
from clusters.node_groups import selectors, services
from config.errors import ApplicationError
from portal.forms import SerializerForm
from portal.views import act, flash_error, portal_view, template_capabilities


@portal_view
def node_group_panel(request: PortalRequest, cluster_id: int) -> HttpResponse:
    """The panel's HTML: every node group EKS has for the cluster, with what the user may do with each; EKS's
    refusal (the cluster unreachable, say) is shown in the panel instead of the table."""
    cluster = cluster_selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    rows, error = [], None
    try:
        groups = selectors.node_group_list(actor=request.user, cluster=cluster)
    except ApplicationError as failure:
        groups, error = [], failure.message
    for group in groups:
        rows.append({"group": group, "caps": template_capabilities(access.capabilities(
            request.user, group, NODE_GROUP_ACTIONS, state_rules.node_group_allows))})
    return render(request, "clusters/node_groups/_panel.html",
                  {"cluster": cluster, "rows": rows, "error": error, "max_nodes": MAX_NODES})


@require_POST
@portal_view
def node_group_scale(request: PortalRequest, cluster_id: int, name: str) -> HttpResponse:
    """Apply the sizes the dialog sent (only the changed ones); "No changes" when EKS already has them."""
    group = selectors.node_group_get(actor=request.user, cluster_id=cluster_id, name=name)
    form = SerializerForm(NodeGroupScaleSerializer, request.POST)
    scaled = form.submit(lambda **data: services.node_group_scale(actor=request.user, group=group, changes=data,
                                                                  source=request.source))
    if form.error is not None:
        flash_error(request, form.error)
    elif scaled is None or scaled[1] is None:
        messages.info(request, f"No changes: node group {group.name} already is as asked.")
    else:
        messages.success(request, f"{scaled[1].title} started.")
    return redirect("cluster-detail", cluster_id=cluster_id)


@require_POST
@portal_view
def node_group_delete(request: PortalRequest, cluster_id: int, name: str) -> HttpResponse:
    group = selectors.node_group_get(actor=request.user, cluster_id=cluster_id, name=name)
    return act(request, lambda: services.node_group_delete(actor=request.user, group=group, source=request.source),
               to=reverse("cluster-detail", args=[cluster_id]), success=f"Deleting node group {group.name}.")
