"""Managed endpoints in the portal: the form that deploys one through the HyperPod inference operator (model source,
instance type, worker, KV cache, intelligent routing, autoscaling, TLS output). Once made, a managed endpoint is an
endpoint: its page, playground, scale and delete are the endpoints' (``inference.views.endpoints``).

The form's inputs are flat (``kv_l2_backend``, ``routing_strategy``, ``autoscaling_max_replicas``…); they become
the REST body — nested ``kv_cache``, ``routing`` and ``autoscaling`` — that the same serializer and service check,
so every refusal is the one REST and MCP give, shown on its input."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from rest_framework import serializers

from accounts.requests import PortalRequest
from config.api.exceptions import error_body
from config.context import Source as Face
from config.errors import ApplicationError
from governance import selectors as governance
from inference.api.managed_endpoint_serializers import MANAGED_SOURCES, ManagedEndpointCreateSerializer
from inference.endpoints import managed, managed_services
from inference.endpoints.managed import ManagedRequest
from inference.views.endpoints import deploy_clusters
from portal.forms import PAGE_ERRORS, SerializerForm
from portal.views import portal_view

INITIAL = {"model_source": "shared", "gpus": "1", "memory_gib": "30", "replicas": "1", "port": "8000",
           "invocation_path": managed.DEFAULT_PATH, "kv_l1": "on", "routing_strategy": ""}
#: Flat inputs → (nested object, its field, is a number).
NESTED = {"kv_l1_size_gib": ("kv_cache", "l1_size_gib", True), "kv_l2_backend": ("kv_cache", "l2_backend", False),
          "kv_l2_url": ("kv_cache", "l2_url", False), "routing_strategy": ("routing", "strategy", False),
          "routing_session_key": ("routing", "session_key", False),
          "autoscaling_min_replicas": ("autoscaling", "min_replicas", True),
          "autoscaling_max_replicas": ("autoscaling", "max_replicas", True),
          "autoscaling_polling_interval": ("autoscaling", "polling_interval", True),
          "autoscaling_cooldown_period": ("autoscaling", "cooldown_period", True)}
FLAT = ("name", "model_source", "model", "instance_type", "image", "invocation_path", "tls_output_uri",
        "sagemaker_endpoint", "priority")
NUMBERS = ("cluster", "gpus", "memory_gib", "replicas", "port")


def _number(text: str) -> Any:
    return int(text) if text.strip().lstrip("-").isdigit() else text


def payload(data: QueryDict) -> dict[str, Any]:
    """The REST body of a submitted form (empty inputs left out, so the serializer's defaults apply)."""
    def text(name: str) -> str:
        return str(data.get(name, "")).strip()

    body: dict[str, Any] = {name: text(name) for name in FLAT if text(name)}
    body.update({name: _number(text(name)) for name in NUMBERS if text(name)})
    if text("args"):
        body["args"] = text("args").split()
    for name, (group, key, number) in NESTED.items():
        value = text(name)
        if value:
            body.setdefault(group, {})[key] = _number(value) if number else value
    if "kv_cache" in body or data.get("kv_l1"):
        body.setdefault("kv_cache", {})["l1"] = bool(data.get("kv_l1"))
    return body


def _context(request: PortalRequest, form: SerializerForm) -> dict[str, Any]:
    errors = {name.replace(".", "_"): items for name, items in form.field_errors.items()}
    return {"section": "inference", "form": form, "errors": errors, **deploy_clusters(request),
            "sources": MANAGED_SOURCES,
            "strategies": managed.STRATEGIES, "backends": managed.L2_BACKENDS, "default_image": managed.DEFAULT_IMAGE}


@portal_view
def managed_endpoint_create(request: PortalRequest) -> HttpResponse:
    """GET: the form. POST: the same checks as REST; the form again with each input's error, or the new endpoint's
    page."""
    if request.method != "POST":
        return render(request, "inference/endpoints/managed_form.html",
                      _context(request, SerializerForm(ManagedEndpointCreateSerializer, initial=INITIAL)))
    form = SerializerForm(ManagedEndpointCreateSerializer, request.POST)
    try:
        serializer = ManagedEndpointCreateSerializer(data=payload(request.POST))
        serializer.is_valid(raise_exception=True)
        values = dict(serializer.validated_data)
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=values.pop("cluster"))
        endpoint, _ = managed_services.managed_endpoint_deploy(actor=request.user, cluster=cluster,
                                                               request=ManagedRequest(**values), origin=Face.PORTAL)
    except PAGE_ERRORS:
        raise
    except (serializers.ValidationError, ApplicationError) as error:
        form.error, form.status = error_body(error)
        return render(request, "inference/endpoints/managed_form.html", _context(request, form), status=form.status)
    messages.success(request, f"Deploying {endpoint.name} through the HyperPod inference operator.")
    return redirect("inference-endpoint", endpoint_id=endpoint.pk)
