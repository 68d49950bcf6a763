"""Calling an endpoint's model: OpenAI-compatible requests sent through the Kubernetes API server's service proxy
(``/api/v1/namespaces/<ns>/services/<name>:80/proxy/…``; a managed endpoint's: the routing Service the inference
operator made, ``<name>-routing``, which applies its intelligent routing), so an in-cluster endpoint answers with no
port-forward and no public exposure, with the same EKS credentials as every other cluster call.

:func:`chat` returns the server's whole ``chat.completion``; :func:`chat_stream` yields the text deltas of a
streamed one (server-sent events) as they arrive; :func:`models` is the server's ``GET /v1/models``. A Service with
no ready pod is ``endpoint_not_ready`` (the API server's 503); any other refusal by the server is
``model_call_failed`` with its message.

A managed endpoint with session routing gets the caller's session id under its session key
(:func:`session_headers`), so the operator's router keeps a caller's conversation on one replica; the portal's id is
derived from the browser session, the API's is the request's ``session_id`` or one derived from the caller
(:func:`session_id_of`: a keyed hash, so the header reveals neither).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from kubernetes.client.exceptions import ApiException

from cloud import kube
from config.errors import CloudError, Conflict
from inference import objects
from inference.endpoints import managed, manifests
from inference.models import Endpoint, EndpointKind

TIMEOUT = 120.0


class EndpointNotReady(Conflict):
    code = "endpoint_not_ready"
    default_message = "No replica of the endpoint is ready to answer."


class ModelCallFailed(CloudError):
    code = "model_call_failed"
    default_message = "The model server refused the request."


def _path(endpoint: Endpoint, route: str) -> str:
    service = managed.routing_service(endpoint) if endpoint.kind == EndpointKind.MANAGED else endpoint.name
    return f"/api/v1/namespaces/{endpoint.namespace}/services/{service}:{manifests.SERVICE_PORT}/proxy{route}"


def session_id_of(secret: str) -> str:
    """A stable session id standing for ``secret`` (a browser session's key, a user's id) that reveals nothing of
    it: a hash keyed with the deployment's secret key."""
    return hmac.new(settings.SECRET_KEY.encode(), secret.encode(), hashlib.sha256).hexdigest()[:32]


def session_headers(endpoint: Endpoint, session_id: str) -> dict[str, str]:
    """The header that carries ``session_id`` to a managed endpoint routed by session — under the session key it was
    deployed with — and ``{}`` for any other endpoint (or no id)."""
    routing = endpoint.routing or {}
    if endpoint.kind != EndpointKind.MANAGED or routing.get("strategy") != "session" or not session_id:
        return {}
    return {str(routing.get("session_key") or managed.DEFAULT_SESSION_KEY): session_id}


def _send(endpoint: Endpoint, method: str, route: str, body: dict[str, Any] | None = None,
          extra: dict[str, str] | None = None) -> Any:
    """The server's answer (a urllib3 response, not yet read) to ``method route`` with the ``extra`` headers;
    refusals raise."""
    api = objects.api_client(endpoint.cluster)
    with kube.translated("proxy services"):
        verb, url, headers, payload, _ = api.param_serialize(
            method, _path(endpoint, route), body=body, auth_settings=["BearerToken"],
            header_params={"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                           **(extra or {})})
        response = api.call_api(verb, url, header_params=headers, body=payload, _request_timeout=TIMEOUT)
        if response.status < 400:
            return response.response
        text = response.read().decode(errors="replace")
        if response.status == 503:
            raise EndpointNotReady(f"No replica of {endpoint.name} is ready to answer.")
        if response.status in (400, 404, 422):
            raise ModelCallFailed(f"{endpoint.name} answered {response.status}: {text[:500]}")
        raise ApiException(status=response.status, reason=response.reason, body=text)


def _json(raw: Any) -> dict[str, Any]:
    try:
        found: dict[str, Any] = json.loads(raw.data)
    finally:
        raw.release_conn()
    return found


def models(endpoint: Endpoint) -> dict[str, Any]:
    """The server's ``GET /v1/models`` answer."""
    return _json(_send(endpoint, "GET", "/v1/models"))


def chat_body(endpoint: Endpoint, messages: list[dict[str, Any]], *, max_tokens: int, temperature: float,
              stream: bool) -> dict[str, Any]:
    return {"model": endpoint.served_model_name, "messages": messages, "max_tokens": max_tokens,
            "temperature": temperature, "stream": stream}


def chat(endpoint: Endpoint, messages: list[dict[str, Any]], *, max_tokens: int = 256,
         temperature: float = 0.7, session_id: str = "") -> dict[str, Any]:
    """One whole ``chat.completion`` from the endpoint's server (``session_id``: see :func:`session_headers`)."""
    return _json(_send(endpoint, "POST", "/v1/chat/completions",
                       chat_body(endpoint, messages, max_tokens=max_tokens, temperature=temperature, stream=False),
                       session_headers(endpoint, session_id)))


def chat_stream(endpoint: Endpoint, messages: list[dict[str, Any]], *, max_tokens: int = 256,
                temperature: float = 0.7, session_id: str = "") -> Iterator[str]:
    """The text of a streamed ``chat.completion``, delta by delta, as the server sends them (``session_id``: see
    :func:`session_headers`)."""
    response = _send(endpoint, "POST", "/v1/chat/completions",
                     chat_body(endpoint, messages, max_tokens=max_tokens, temperature=temperature, stream=True),
                     session_headers(endpoint, session_id))
    raw = response
    buffer = b""
    try:
        for chunk in raw.stream(1024):
            buffer += chunk
            while b"\n\n" in buffer:
                event, buffer = buffer.split(b"\n\n", 1)
                for line in event.decode().splitlines():
                    if not line.startswith("data:"):
                        continue
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return
                    delta = ((json.loads(data).get("choices") or [{}])[0].get("delta") or {}).get("content")
                    if delta:
                        yield delta
    finally:
        raw.release_conn()


def metrics(endpoint: Endpoint) -> dict[str, float]:
    """The Prometheus samples of one replica's ``/metrics`` (through the service proxy), by metric name, summed
    over labels."""
    raw = _send(endpoint, "GET", "/metrics")
    try:
        text = raw.data.decode(errors="replace")
    finally:
        raw.release_conn()
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        try:
            samples[name.split("{", 1)[0]] = samples.get(name.split("{", 1)[0], 0.0) + float(value)
        except ValueError:
            continue
    return samples
