"""The "Advanced features" panel of a cluster page: loaded by htmx from the detail page, refreshed while an
operation changes the cluster, and changed by ``static/js/cluster-features.js``, which posts as JSON only the
fields the user changed — validated with the REST serializer and applied by the same service."""

from __future__ import annotations

import json

from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods
from rest_framework.exceptions import ValidationError

from accounts.requests import PortalRequest
from clusters import selectors
from clusters.api.feature_serializers import FeaturesUpdateSerializer, capabilities, feature_row
from clusters.features import observe, services
from clusters.features.catalog import MEMORY_PERCENTAGE_RANGE, ORDER
from clusters.services import running_operation
from config.api.exceptions import error_body
from config.api.parsers import check_json_depth
from config.errors import JsonTooDeep
from operations import selectors as operation_selectors
from portal.views import perform, portal_view


def _requested(request: PortalRequest) -> tuple[dict | None, dict | None]:
    """The posted changes, shape-checked, or the REST error body."""
    try:
        check_json_depth(request.body)
        data = json.loads(request.body or b"{}")
    except JsonTooDeep as exc:
        return None, exc.as_dict()
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return None, {"code": "malformed_request", "message": "Send the changes as a JSON object.", "fields": {}}
    serializer = FeaturesUpdateSerializer(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except ValidationError as exc:
        return None, error_body(exc)[0]
    return dict(serializer.validated_data), None


#: The field errors the panel shows next to an input or a feature's row; the others go with the form's error.
PLACED_FIELDS = {*ORDER, "tiered_checkpointing.memory_percentage"}


def _unplaced(fields: dict[str, list[dict[str, str]]]) -> list[dict[str, str]]:
    return [{**item, "message": f"{name}: {item['message']}"} for name, items in fields.items()
            if name not in PLACED_FIELDS for item in items]


@require_http_methods(["GET", "POST"])
@portal_view
def feature_panel(request: PortalRequest, cluster_id: int) -> HttpResponse:
    cluster = selectors.cluster_get(actor=request.user, cluster_id=cluster_id)
    error, outcome, status, warnings = None, "", 200, []
    if request.method == "POST":
        requested, error = _requested(request)
        if requested is not None:
            result, error = perform(lambda: services.features_update(
                actor=request.user, cluster=cluster, requested=requested, source=request.source))
            if result is not None:
                outcome = "changed" if result.changed else "unchanged"
                warnings = result.warnings
        if error:
            status = 400 if error["code"] in {"validation_failed", "malformed_request", "json_too_deep"} else 409
    running = running_operation(cluster)
    if running is None and request.method == "GET":
        rows = services.features_get(actor=request.user, cluster=cluster)
    else:
        rows = services.recorded(cluster)
    operation = operation_selectors.operation_get(actor=request.user, operation_id=running.pk) if running else None
    states = observe.prerequisite_states(cluster) if running is None and cluster.eks_name and \
        cluster.state == "active" else {}
    caps = {action.replace(".", "_"): allowed for action, allowed in capabilities(request.user, cluster).items()}
    fields = (error or {}).get("fields", {})
    context = {"cluster": cluster, "features": [feature_row(row, states) for row in rows], "operation": operation,
               "caps": caps, "error": error, "outcome": outcome, "warnings": warnings,
               "field_errors": fields, "other_errors": _unplaced(fields), "percentage_range": MEMORY_PERCENTAGE_RANGE}
    return render(request, "clusters/features/panel.html", context, status=status)
