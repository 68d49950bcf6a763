"""The REST dry-run convention: ``?dry_run=true`` on any mutating request under ``/api/v1/``.

The request runs as it would — authentication, throttling, permissions, serializer validation, the service with its
state rules and its AWS and Kubernetes reads — inside a database transaction that is always rolled back, with every
AWS and Kubernetes write withheld (:mod:`config.plans`). The ``Idempotency-Key`` header is ignored: a dry run neither
consumes nor replays a key. A refusal is answered exactly as the real call would answer it; otherwise the answer is
``200`` with the plan (:func:`config.plans.plan`). ``dry_run=false`` (or ``0``) is the real call; another value is
``validation_failed`` on the ``dry_run`` field.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from config import plans
from config.api.exceptions import error_body
from config.errors import ValidationFailed

PARAMETER = "dry_run"
MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_TRUE, _FALSE = frozenset({"true", "1"}), frozenset({"false", "0"})

DRY_RUN_PARAMETER = {
    "name": PARAMETER,
    "in": "query",
    "required": False,
    "description": (
        "Preview the change instead of making it: every check runs (permissions, validation, state rules, the "
        "AWS and Kubernetes reads the real call makes) and the answer is the plan — the operation that would "
        "start with its phases, and the AWS, Kubernetes and InstantStart objects that would be created, changed or "
        "deleted. Nothing is created and no idempotency key is used. Refusals are answered as for the real call."
    ),
    "schema": {"type": "boolean", "default": False},
}


def requested(request: HttpRequest) -> bool:
    """Whether ``request`` asks for a dry run (``ValidationFailed`` on ``dry_run`` for a value that is not a
    boolean). Only mutating requests under ``/api/v1/`` can."""
    if request.method not in MUTATING_METHODS or not request.path.startswith("/api/v1/"):
        return False
    value = request.GET.get(PARAMETER)
    if value is None or value.lower() in _FALSE:
        return False
    if value.lower() in _TRUE:
        return True
    raise ValidationFailed.for_field(PARAMETER, "invalid", "Must be a valid boolean: true or false.")


class DryRunMiddleware:
    """Runs a dry-run request as a preview and answers its plan (see the module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            if not requested(request):
                return self.get_response(request)
        except ValidationFailed as refused:
            body, status = error_body(refused)
            return JsonResponse(body, status=status)
        response, plan = plans.run(lambda: self.get_response(request))
        if response is not None and not 200 <= response.status_code < 300:
            return response
        return JsonResponse(plan)


#: The body of a dry run's ``200`` (``config.plans.plan``).
DRY_RUN_PLAN_SCHEMA = {
    "type": "object",
    "required": ["dry_run", "summary", "operation", "changes"],
    "properties": {
        "dry_run": {"type": "boolean", "enum": [True]},
        "summary": {"type": "string"},
        "operation": {"type": "object", "nullable": True, "additionalProperties": True},
        "changes": {"type": "array", "items": {"type": "object", "additionalProperties": True}},
    },
}


def add_dry_run_parameter(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: add ``components.parameters.DryRun`` and reference it from every
    mutating operation under ``/api/v1/`` (MCP tools derive their ``dry_run`` argument from it), and document the
    plan a dry run answers as that operation's ``200`` (beside the real answer's schema when that is a ``200``
    too)."""
    components = result.setdefault("components", {})
    components.setdefault("parameters", {})["DryRun"] = DRY_RUN_PARAMETER
    components.setdefault("schemas", {})["DryRunPlan"] = DRY_RUN_PLAN_SCHEMA
    reference = {"$ref": "#/components/parameters/DryRun"}
    plan = {"$ref": "#/components/schemas/DryRunPlan"}
    for path, item in result.get("paths", {}).items():
        if not path.startswith("/api/v1/"):
            continue
        for method, operation in item.items():
            if method.upper() not in MUTATING_METHODS:
                continue
            operation.setdefault("parameters", []).append(reference)
            responses = operation.setdefault("responses", {})
            ok = responses.get("200")
            if ok is None:
                responses["200"] = {"description": "The plan of a dry run (`?dry_run=true`); nothing was changed.",
                                    "content": {"application/json": {"schema": plan}}}
            elif "application/json" in ok.get("content", {}):
                body = ok["content"]["application/json"]
                body["schema"] = {"anyOf": [body["schema"], plan]}
    return result
