"""A cluster's nodes page: the merged node table (filters, cursor pages), the batch actions the user may start
(reboot, replace with its data-loss confirmation, delete) and the progress panel of the latest node batch.

The page follows the team feed like the cluster page (``static/js/cluster-live.js``, kinds ``node.``): a batch's
progress re-reads the page and swaps the table; ``static/js/cluster-nodes.js`` keeps the ticked nodes across those
swaps and opens the confirmation dialogs.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import access
from accounts.requests import PortalRequest
from clusters import actions, node_actions, nodes, selectors
from clusters.api.node_serializers import NODE_ACTIONS, NodeBatchSerializer, NodeQuery, NodeReplaceSerializer
from clusters.models import Cluster, ClusterState
from config.api.exceptions import error_body
from config.errors import ApplicationError
from operations import selectors as operation_selectors
from operations.models import ACTIVE_STATES
from portal.forms import PAGE_ERRORS, SerializerForm
from portal.views import next_url, portal_view

_SERIALIZERS = {node_actions.REBOOT: NodeBatchSerializer, node_actions.REPLACE: NodeReplaceSerializer,
                node_actions.DELETE: NodeBatchSerializer}


def _latest_batch(request: PortalRequest, cluster: Cluster):
    """The running node batch of the cluster, else the latest one (with its phases, for the progress panel)."""
    batches = list(operation_selectors.with_phases(
        selectors.cluster_operations(actor=request.user, cluster=cluster).filter(kind__startswith="node."))[:5])
    return next((operation for operation in batches if operation.state in ACTIVE_STATES),
                batches[0] if batches else None)


def _render(request: PortalRequest, cluster: Cluster, *, form: SerializerForm | None = None, action: str = "",
            status: int = 200) -> HttpResponse:
    access.require(request.user, actions.NODE_VIEW, cluster)
    page, list_error, query = None, None, None
    try:
        query = NodeQuery(request.GET)
        page = query.page(cluster)
    except PAGE_ERRORS:
        raise
    except ApplicationError as exc:
        list_error = error_body(exc)[0]
    params = request.GET.copy()
    params.pop("cursor", None)
    chosen = set(form.data.getlist("node_ids")) if form is not None and form.data is not None else set()
    return render(request, "clusters/nodes/page.html", {
        "section": "clusters", "cluster": cluster, "page": page, "list_error": list_error,
        "filters": {"instance_group": query.instance_group if query else "",
                    "statuses": query.statuses if query else []},
        "statuses": nodes.node_statuses(), "filter_query": params.urlencode(), "chosen": chosen,
        "form": form, "form_action": action, "current_operation": _latest_batch(request, cluster),
        "caps": {name.replace(".", "_"): allowed
                 for name, allowed in access.capabilities(request.user, cluster, NODE_ACTIONS).items()},
        "data_loss_warning": node_actions.DATA_LOSS_WARNING, "live_teams": str(cluster.team_id),
    }, status=status)


@portal_view
def node_list(request: PortalRequest, cluster_id: int) -> HttpResponse:
    """The nodes of one cluster; ``?instance_group=``, ``?status=`` (repeatable) and ``?cursor=`` as in REST.
    A deleted cluster has no nodes to ask AWS about: the user is sent to its page (its history) with a note."""
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    if cluster.state == ClusterState.DELETED:
        messages.info(request, f"{cluster.name} is deleted: it has no nodes any more. Its history is below.")
        return redirect("cluster-detail", cluster.pk)
    return _render(request, cluster)


@require_POST
@portal_view
def node_batch(request: PortalRequest, cluster_id: int, action: str) -> HttpResponse:
    """Validate the ticked nodes with the REST serializer and start the batch (``node_actions.node_batch``);
    errors re-render the page with them, at the REST status."""
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    access.require(request.user, f"node.{action}", cluster)
    form = SerializerForm(_SERIALIZERS[action], request.POST, ignore=("next",))
    operation = form.submit(lambda **data: node_actions.node_batch(
        actor=request.user, cluster=cluster, action=action, source=request.source, **data))
    if operation is None:
        return _render(request, cluster, form=form, action=action, status=form.status)
    messages.success(request, f"{operation.title}: started.")
    return redirect(next_url(request, reverse("cluster-nodes", args=[cluster.pk])))
