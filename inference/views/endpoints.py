"""Endpoints in the portal: the list with readiness, the deploy form with per-engine defaults, an endpoint's page
(replicas, pods, events, crash logs, URL, the server's metrics, its KEDA autoscaling panel, Scale, Update and
Delete), and the playground that streams the model's answer token by token.

Reads go through ``inference.selectors`` (the page reads the cluster live through ``services.endpoint_refresh``);
every change runs the same service as REST with ``origin="portal"``. The playground posts to
:func:`endpoint_stream`, which relays the server's streamed chat completion (through the API server's service
proxy) as plain text chunks the page appends as they arrive (``static/js/inference-playground.js``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib import messages
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import access
from accounts.requests import PortalRequest
from clusters import selectors as cluster_selectors
from clusters.models import ClusterState
from config.context import Source as Face
from config.errors import ApplicationError, ValidationFailed
from costs import selectors as cost_selectors
from governance import selectors as governance
from inference import actions, selectors, state_rules
from inference.api.endpoint_serializers import ENDPOINT_ACTIONS, AutoscalingSerializer, EndpointDeploySerializer
from inference.endpoints import calls, router, scaling, services
from inference.endpoints.plan import IMAGES, Request, serving_group
from inference.models import Endpoint, Engine, Exposure, ModelSource
from portal.forms import SerializerForm
from portal.views import act, portal_view

LIST_LIMIT = 200
AUTOSCALING_METRICS = [("waiting_requests", "Waiting requests"), ("running_requests", "Running requests"),
                       ("tokens_per_second", "Tokens per second")]


@portal_view
def endpoint_list(request: PortalRequest) -> HttpResponse:
    """The current team's endpoints with replicas ready of desired; ``?partial=1`` renders the rows alone."""
    endpoints = list(selectors.endpoint_list(actor=request.user, team=request.team)[:LIST_LIMIT])
    context: dict[str, Any] = {"section": "inference", "endpoints": endpoints}
    if request.GET.get("partial"):
        return render(request, "inference/endpoints/_rows.html", context)
    clusters = cluster_selectors.cluster_list(actor=request.user, team=request.team)
    context["can_deploy"] = any(access.can(request.user, actions.ENDPOINT_DEPLOY, cluster) for cluster in clusters) \
        or bool(governance.shared_cluster_choices(request.user, request.team, actions.ENDPOINT_DEPLOY))
    return render(request, "inference/endpoints/list.html", context)


@portal_view
def endpoint_estimate(request: PortalRequest) -> HttpResponse:
    """The deploy form's estimate (``templates/costs/_estimate.html``): ``replicas`` instances of the type of the
    group the endpoint would run on (``instance_group``, else the first GPU group of ``cluster``), on-demand. A
    half-filled form shows no estimate."""
    estimate = None
    replicas = (request.GET.get("replicas") or "").strip()
    try:
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=request.GET.get("cluster") or "")
        group = serving_group(cluster, (request.GET.get("instance_group") or "").strip())
        if group is not None and replicas.isdigit() and int(replicas) > 0:
            estimate = cost_selectors.estimate_get(actor=request.user, team=governance.working_team(
                request.user, cluster), region=cluster.region,
                                                   lines=[(group.instance_type, int(replicas))])
    except ApplicationError:
        estimate = None
    return render(request, "costs/_estimate.html", {"estimate": estimate})


def deploy_clusters(request: PortalRequest) -> dict[str, Any]:
    """What a deploy form offers: ``clusters``, the active clusters of the current team (of every team of the user
    when none is current) the user may deploy on, then those shared with it through a compute quota
    (``governance.shared_cluster_choices``), whose ids are ``shared``."""
    own = [cluster for cluster in cluster_selectors.cluster_list(actor=request.user, team=request.team)
           .filter(state=ClusterState.ACTIVE).order_by("name")
           if access.can(request.user, actions.ENDPOINT_DEPLOY, cluster)]
    shared = [cluster for cluster in governance.shared_cluster_choices(request.user, request.team,
                                                                       actions.ENDPOINT_DEPLOY) if cluster not in own]
    return {"clusters": own + shared, "shared": [cluster.pk for cluster in shared]}


def _deploy_context(request: PortalRequest, form: SerializerForm) -> dict[str, Any]:
    return {"section": "inference", "form": form, **deploy_clusters(request), "engines": Engine.choices,
            "images": IMAGES, "sources": ModelSource.choices,
            "exposures": [choice for choice in Exposure.choices if choice[0] != Exposure.POOL],
            "router_policies": router.POLICIES}


@portal_view
def endpoint_deploy(request: PortalRequest) -> HttpResponse:
    """GET: the deploy form (vLLM defaults). POST: the same checks as REST; the form again with each field's error,
    or the new endpoint's page."""
    if request.method != "POST":
        form = SerializerForm(EndpointDeploySerializer, initial={"engine": "vllm", "gpus": 1, "replicas": 1,
                                                                  "port": 8000, "model_source": "shared",
                                                                  "exposure": "cluster_ip"})
        return render(request, "inference/endpoints/deploy.html", _deploy_context(request, form))
    data = request.POST.copy()
    data.setlist("command", data.get("command", "").split())
    for name in ("tensor_parallel", "hf_token", "engine", "priority",
                 *(key for key in data if key.startswith("router."))):
        if not data.get(name):
            data.pop(name, None)
    form = SerializerForm(EndpointDeploySerializer, data)

    def deploy(**values: Any):
        cluster = governance.workload_cluster_get(actor=request.user, cluster_id=values.pop("cluster"))
        return services.endpoint_deploy(actor=request.user, cluster=cluster, request=Request(**values),
                                        origin=Face.PORTAL)

    deployed = form.submit(deploy)
    if deployed is None:
        form.values.pop("hf_token", None)
        form.values["command"] = request.POST.get("command", "")
        context = _deploy_context(request, form)
        context["router_values"] = {key.removeprefix("router."): value for key, value in request.POST.items()
                                    if key.startswith("router.")}
        return render(request, "inference/endpoints/deploy.html", context, status=form.status)
    messages.success(request, f"Deploying {deployed[0].name}.")
    return redirect("inference-endpoint", endpoint_id=deployed[0].pk)


def _metrics(endpoint) -> dict[str, float]:
    if not endpoint.ready_replicas:
        return {}
    try:
        return calls.metrics(endpoint)
    except ApplicationError:
        return {}


def _detail_context(request: PortalRequest, endpoint: Endpoint) -> dict[str, Any]:
    caps = access.capabilities(request.user, endpoint, ENDPOINT_ACTIONS, state_rules.endpoint_allows)
    return {"section": "inference", "endpoint": endpoint, "can_update": caps[actions.ENDPOINT_UPDATE],
            "can_delete": caps[actions.ENDPOINT_DELETE], "can_call": caps[actions.ENDPOINT_CALL],
            "metrics": _metrics(endpoint), "command": " ".join(endpoint.command),
            "autoscaling_form": SerializerForm(AutoscalingSerializer), "autoscaling_metrics": AUTOSCALING_METRICS}


@portal_view
def endpoint_detail(request: PortalRequest, endpoint_id: int) -> HttpResponse:
    """An endpoint read live; ``?partial=1`` renders the status block alone (the htmx refresh)."""
    endpoint = services.endpoint_refresh(selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id))
    context = _detail_context(request, endpoint)
    if request.GET.get("partial"):
        return render(request, "inference/endpoints/_status.html", context)
    return render(request, "inference/endpoints/detail.html", context)


@require_POST
@portal_view
def endpoint_autoscaling(request: PortalRequest, endpoint_id: int) -> HttpResponse:
    """The autoscaling panel: turn it on or change it (the fields filled in; the page again with each field's
    error, status of the REST error), or turn it off (``disable``)."""
    endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
    back = reverse("inference-endpoint", args=[endpoint.pk])
    if request.POST.get("disable"):
        return act(request, lambda: scaling.autoscaling_disable(actor=request.user, endpoint=endpoint,
                                                                 origin=Face.PORTAL),
                   to=back, success=f"Turning autoscaling of {endpoint.name} off.")
    data = request.POST.copy()
    for name in list(data):
        if not data.get(name):
            data.pop(name)
    data.setdefault("scale_to_zero", "false")
    form = SerializerForm(AutoscalingSerializer, data)
    done = form.submit(lambda **values: scaling.autoscaling_set(actor=request.user, endpoint=endpoint,
                                                                requested=values, origin=Face.PORTAL))
    if done is None:
        context = {**_detail_context(request, endpoint), "autoscaling_form": form}
        return render(request, "inference/endpoints/detail.html", context, status=form.status)
    messages.success(request, f"Autoscaling {endpoint.name}.")
    return redirect(back)


@require_POST
@portal_view
def endpoint_update(request: PortalRequest, endpoint_id: int) -> HttpResponse:
    """Scale (``replicas``) or roll out ``image``/``command``: only the fields the form sends non-empty."""
    endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
    back = reverse("inference-endpoint", args=[endpoint.pk])

    def update():
        replicas = request.POST.get("replicas", "").strip()
        if replicas and not replicas.isdigit():
            raise ValidationFailed.for_field("replicas", "invalid", "Replicas is a whole number.")
        command = request.POST.get("command", "").split()
        return services.endpoint_update(actor=request.user, endpoint=endpoint, origin=Face.PORTAL,
                                        replicas=int(replicas) if replicas else None,
                                        image=request.POST.get("image", "").strip() or None,
                                        command=command or None)

    return act(request, update, to=back, success=f"Rolling out the change to {endpoint.name}.")


@require_POST
@portal_view
def endpoint_delete(request: PortalRequest, endpoint_id: int) -> HttpResponse:
    endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
    return act(request, lambda: services.endpoint_delete(actor=request.user, endpoint=endpoint, origin=Face.PORTAL),
               to=reverse("inference-endpoint", args=[endpoint.pk]), success=f"Deleting {endpoint.name}.")


@portal_view
def endpoint_playground(request: PortalRequest, endpoint_id: int) -> HttpResponse:
    """The playground: a conversation with the endpoint's model, its answers streamed; ``GET /v1/models`` shown."""
    endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
    access.require(request.user, actions.ENDPOINT_CALL, endpoint)
    try:
        models, models_error = calls.models(endpoint), ""
    except ApplicationError as error:
        models, models_error = {}, error.message
    return render(request, "inference/endpoints/playground.html", {
        "section": "inference", "endpoint": endpoint, "models": json.dumps(models, indent=2),
        "models_error": models_error})


def _next_chunk(stream: Iterator[str]) -> str | None:
    return next(stream, None)


@require_POST
@portal_view
def endpoint_stream(request: PortalRequest, endpoint_id: int) -> HttpResponse | StreamingHttpResponse:
    """Relay a streamed chat completion: the body is ``{"messages": [...], "max_tokens"}``; the answer is the
    model's text, chunk by chunk (``text/plain``). A refusal before the first token is a JSON error body."""
    endpoint = selectors.endpoint_get(actor=request.user, endpoint_id=endpoint_id)
    access.require(request.user, actions.ENDPOINT_CALL, endpoint)
    try:
        body = json.loads(request.body or b"{}")
        messages_ = [{"role": str(m["role"]), "content": str(m["content"])} for m in body.get("messages") or []]
        max_tokens = int(body.get("max_tokens") or 256)
    except (ValueError, KeyError, TypeError):
        return HttpResponse(json.dumps({"code": "invalid", "message": "messages must be a list of role/content."}),
                            status=400, content_type="application/json")
    try:
        session = calls.session_id_of(f"portal:{request.session.session_key or request.user.pk}")
        stream = calls.chat_stream(endpoint, messages_, max_tokens=max_tokens, session_id=session)
        first = next(stream, "")
    except ApplicationError as error:
        return HttpResponse(json.dumps(error.as_dict()), status=error.status, content_type="application/json")

    async def relay() -> AsyncIterator[str]:
        """Each chunk as the server sends it (an async iterator: Django's ASGI handler would read a synchronous one
        to its end before sending anything)."""
        yield first
        while True:
            chunk = await sync_to_async(_next_chunk, thread_sensitive=False)(stream)
            if chunk is None:
                return
            yield chunk

    return StreamingHttpResponse(relay(), content_type="text/plain; charset=utf-8")
