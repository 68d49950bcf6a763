"""Answers for API paths that match no endpoint: the same JSON error body, never an HTML page."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt


@csrf_exempt
def api_not_found(request: HttpRequest, *args: Any, **kwargs: Any) -> JsonResponse:
    return JsonResponse({"code": "not_found", "message": "No such API endpoint.", "fields": {}}, status=404)
