"""The answer of a REST change that may start an operation: what it changed, and the operation to follow.

Every such view — clusters, volumes, instance groups, settings, software updates, features, node batches, training
jobs, MLflow servers — answers through :func:`operation_response`, so each body has the same order (its own fields,
``operation``, then any trailing fields) and each operation is shown as the caller sees it at the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rest_framework import status
from rest_framework.response import Response

from accounts.requests import ApiRequest
from operations import selectors
from operations.api.serializers import OperationSerializer
from operations.models import Operation


def operation_response(request: ApiRequest, operation: Operation | None, fields: Mapping[str, Any] | None = None, *,
                       trailing: Mapping[str, Any] | None = None,
                       status_without: int = status.HTTP_200_OK) -> Response:
    """``{**fields, "operation": …, **trailing}``: ``202 Accepted`` with the operation serialized, or
    ``status_without`` (``200`` unless told) with ``"operation": null`` when nothing was started.

    The operation is read again through ``operations.selectors.operation_get`` as ``request.user``: the body shows
    its state, phases and capabilities at the answer (a replayed request answers like the first), and an operation
    the caller may not see is ``NotFound``. ``fields`` and ``trailing`` are already serialized."""
    shown = selectors.operation_get(actor=request.user, operation_id=operation.pk) if operation else None
    body = {**(fields or {}),
            "operation": OperationSerializer(shown, context={"request": request}).data if shown else None,
            **(trailing or {})}
    return Response(body, status=status.HTTP_202_ACCEPTED if shown else status_without)
