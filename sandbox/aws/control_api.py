"""The control API under ``/_sandbox/`` on the AWS port (JSON in, JSON out; see docs/sandbox-aws.md).

====================================  ==============================================================
``GET /_sandbox``                     the extension operations and these endpoints
``POST /_sandbox/reset``              ``sandbox.control.reset()``: moto, extensions, faults, log
``GET|PUT /_sandbox/clock``           the time scale: ``{"scale": 0.05}``
``GET|PUT /_sandbox/iam``             IAM's propagation delay: ``{"propagation_seconds": 5}`` (AWS time)
``GET|POST|DELETE /_sandbox/faults``  the fault plan (``DELETE /_sandbox/faults/<id>`` for one rule)
``GET|DELETE /_sandbox/requests``     the mutating-call log (``?service=&operation=&since=&effective=``)
``GET|DELETE /_sandbox/kube-requests`` the Kubernetes write log (``?since=``; ``sandbox.kube.requestlog``)
``GET|PUT /_sandbox/quotas``          quota values: ``{"service_code", "quota_code"|"quota_name", "value"}``
``GET|POST /_sandbox/training-plans`` training plans (``{"region"}`` alone seeds two stock plans)
``GET|POST|DELETE /_sandbox/outcomes`` requested failures of resources created later
``GET /_sandbox/world``               EKS clusters with add-ons and HyperPod clusters with nodes
``POST /_sandbox/pod-logs/drop``      end open ``follow=true`` log streams: ``{"region", "cluster", "namespace",
                                      "pod"?}`` → ``{"streams_ended"}``
``POST /_sandbox/pod-logs/rotate``    the kubelet rotates those pods' logs (same body) → ``{"streams_ended",
                                      "lines_rotated"}``
``POST /_sandbox/node-faults``        a hardware fault on a HyperPod node, seen only by the health-monitoring
                                      agent: ``{"region", "cluster", "node", "reason", "action": "reboot"|"replace"}``
``POST /_sandbox/device-faults``      a node's devices of one resource turn unhealthy (allocatable 0, capacity
                                      kept): ``{"region", "cluster", "node", "resource": "vpc.amazonaws.com/efa"}``
====================================  ==============================================================

Malformed input is a 400 with ``{"error": message}``; an unknown path a 404, a wrong method a 405.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.wrappers import Request, Response

from sandbox import clock, control
from sandbox.aws import core, faults, iam_roles, outcomes, quotas, requestlog, training_plans, world
from sandbox.kube import requestlog as kube_requestlog
from sandbox.kube import world as kube_world
from sandbox.sim import devices, health

Route = Callable[[Request], tuple[int, Any]]


def _body(request: Request) -> Any:
    try:
        return json.loads(request.get_data() or b"{}")
    except ValueError as error:
        raise ValueError(f"the body is not JSON: {error}") from error


def _object(request: Request) -> dict[str, Any]:
    body = _body(request)
    if not isinstance(body, dict):
        raise ValueError("the body must be a JSON object")
    return body


def _index(_: Request) -> tuple[int, Any]:
    return 200, {"operations": core.operations(), "endpoints": sorted(f"{m} {p}" for p, m in _ROUTES)}


def _reset(_: Request) -> tuple[int, Any]:
    control.reset()
    return 200, {"status": "ok"}


def _get_iam(_: Request) -> tuple[int, Any]:
    return 200, {"propagation_seconds": iam_roles.propagation_seconds()}


def _put_iam(request: Request) -> tuple[int, Any]:
    seconds = _object(request).get("propagation_seconds")
    if not isinstance(seconds, int | float):
        raise ValueError("propagation_seconds must be a number")
    iam_roles.set_propagation_seconds(float(seconds))
    return 200, {"propagation_seconds": iam_roles.propagation_seconds()}


def _get_clock(_: Request) -> tuple[int, Any]:
    return 200, {"scale": clock.scale(), "now": clock.now()}


def _put_clock(request: Request) -> tuple[int, Any]:
    scale = _object(request).get("scale")
    if not isinstance(scale, int | float):
        raise ValueError("scale must be a number")
    clock.set_scale(float(scale))
    return 200, {"scale": clock.scale()}


def _get_faults(_: Request) -> tuple[int, Any]:
    return 200, {"faults": faults.rules()}


def _post_faults(request: Request) -> tuple[int, Any]:
    return 201, {"fault": faults.add(_object(request)).public()}


def _delete_faults(request: Request) -> tuple[int, Any]:
    rule_id = request.path.rstrip("/").removeprefix("/_sandbox/faults").strip("/")
    if not rule_id:
        faults.clear()
        return 200, {"faults": []}
    if not rule_id.isdigit() or not faults.remove(int(rule_id)):
        return 404, {"error": f"no fault rule {rule_id}"}
    return 200, {"faults": faults.rules()}


def _get_requests(request: Request) -> tuple[int, Any]:
    args = request.args
    since = args.get("since", "0")
    if not since.isdigit():
        raise ValueError("since must be a sequence number")
    entries = requestlog.entries(service=args.get("service"), operation=args.get("operation"), since=int(since),
                                 effective=args.get("effective", "").lower() in ("1", "true", "yes"))
    return 200, {"requests": [entry.public() for entry in entries]}


def _delete_requests(_: Request) -> tuple[int, Any]:
    requestlog.clear()
    return 200, {"requests": []}


def _get_kube_requests(request: Request) -> tuple[int, Any]:
    since = request.args.get("since", "0")
    if not since.isdigit():
        raise ValueError("since must be a sequence number")
    return 200, {"requests": [entry.public() for entry in kube_requestlog.entries(int(since))]}


def _delete_kube_requests(_: Request) -> tuple[int, Any]:
    kube_requestlog.clear()
    return 200, {"requests": []}


def _get_quotas(_: Request) -> tuple[int, Any]:
    return 200, {"quotas": quotas.overrides()}


def _put_quotas(request: Request) -> tuple[int, Any]:
    body = _body(request)
    items = body if isinstance(body, list) else [body]
    if not all(isinstance(item, dict) for item in items):
        raise ValueError("the body must be a quota object or a list of them")
    return 200, {"quotas": [quotas.set_value(item) for item in items]}


def _get_plans(request: Request) -> tuple[int, Any]:
    region = request.args.get("region")
    with core.transaction():
        plans = [{"name": plan.name, "arn": plan.arn, "region": plan.region, "status": plan.status,
                  "instance_type": plan.instance_type, "instance_count": plan.count}
                 for plan in training_plans.plans() if region in (None, plan.region)]
    return 200, {"training_plans": plans}


def _post_plans(request: Request) -> tuple[int, Any]:
    return 201, {"training_plans": training_plans.seed(_object(request))}


def _get_outcomes(_: Request) -> tuple[int, Any]:
    return 200, {"outcomes": outcomes.rules()}


def _post_outcomes(request: Request) -> tuple[int, Any]:
    return 201, {"outcome": outcomes.add(_object(request))}


def _delete_outcomes(_: Request) -> tuple[int, Any]:
    outcomes.clear()
    return 200, {"outcomes": []}


def _world(_: Request) -> tuple[int, Any]:
    return 200, world.snapshot()


class _NotFound(Exception):
    """Answered with a 404."""


def _log_target(request: Request) -> tuple[Any, str, str | None]:
    """The cluster store, namespace and optional pod a pod-log fault names (``_NotFound`` when unknown)."""
    body = _object(request)
    for key in ("region", "cluster", "namespace"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise ValueError(f"{key} is required")
    pod = body.get("pod")
    if pod is not None and not isinstance(pod, str):
        raise ValueError("pod must be a string")
    store = kube_world.existing_store(body["region"], body["cluster"])
    if store is None:
        raise _NotFound(f"no Kubernetes API server for cluster {body['cluster']} in {body['region']}")
    if pod and store.find("pods", pod, body["namespace"]) is None:
        raise _NotFound(f"no pod {body['namespace']}/{pod} in cluster {body['cluster']}")
    return store, body["namespace"], pod or None


def _drop_pod_logs(request: Request) -> tuple[int, Any]:
    store, namespace, pod = _log_target(request)
    return 200, {"streams_ended": store.logs.cut(namespace, pod)}


def _rotate_pod_logs(request: Request) -> tuple[int, Any]:
    store, namespace, pod = _log_target(request)
    rotated, ended = store.logs.rotate(namespace, pod)
    return 200, {"streams_ended": ended, "lines_rotated": rotated}


def _post_node_fault(request: Request) -> tuple[int, Any]:
    body = _object(request)
    for key in ("region", "cluster", "node", "reason", "action"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise ValueError(f"{key} is required")
    store = kube_world.existing_store(body["region"], body["cluster"])
    if store is None:
        raise _NotFound(f"no Kubernetes API server for cluster {body['cluster']} in {body['region']}")
    if store.find("nodes", body["node"]) is None:
        raise _NotFound(f"no node {body['node']} in cluster {body['cluster']}")
    health.inject(body["region"], body["cluster"], body["node"], body["reason"], body["action"])
    return 201, {"fault": {key: body[key] for key in ("region", "cluster", "node", "reason", "action")}}


def _post_device_fault(request: Request) -> tuple[int, Any]:
    body = _object(request)
    for key in ("region", "cluster", "node", "resource"):
        if not isinstance(body.get(key), str) or not body[key]:
            raise ValueError(f"{key} is required")
    store = kube_world.existing_store(body["region"], body["cluster"])
    if store is None:
        raise _NotFound(f"no Kubernetes API server for cluster {body['cluster']} in {body['region']}")
    if store.find("nodes", body["node"]) is None:
        raise _NotFound(f"no node {body['node']} in cluster {body['cluster']}")
    devices.fail(body["region"], body["cluster"], body["node"], body["resource"])
    return 201, {"fault": {key: body[key] for key in ("region", "cluster", "node", "resource")}}


_ROUTES: dict[tuple[str, str], Route] = {
    ("/_sandbox", "GET"): _index,
    ("/_sandbox/reset", "POST"): _reset,
    ("/_sandbox/iam", "GET"): _get_iam,
    ("/_sandbox/iam", "PUT"): _put_iam,
    ("/_sandbox/clock", "GET"): _get_clock,
    ("/_sandbox/clock", "PUT"): _put_clock,
    ("/_sandbox/faults", "GET"): _get_faults,
    ("/_sandbox/faults", "POST"): _post_faults,
    ("/_sandbox/faults", "DELETE"): _delete_faults,
    ("/_sandbox/requests", "GET"): _get_requests,
    ("/_sandbox/requests", "DELETE"): _delete_requests,
    ("/_sandbox/kube-requests", "GET"): _get_kube_requests,
    ("/_sandbox/kube-requests", "DELETE"): _delete_kube_requests,
    ("/_sandbox/quotas", "GET"): _get_quotas,
    ("/_sandbox/quotas", "PUT"): _put_quotas,
    ("/_sandbox/training-plans", "GET"): _get_plans,
    ("/_sandbox/training-plans", "POST"): _post_plans,
    ("/_sandbox/outcomes", "GET"): _get_outcomes,
    ("/_sandbox/outcomes", "POST"): _post_outcomes,
    ("/_sandbox/outcomes", "DELETE"): _delete_outcomes,
    ("/_sandbox/world", "GET"): _world,
    ("/_sandbox/pod-logs/drop", "POST"): _drop_pod_logs,
    ("/_sandbox/pod-logs/rotate", "POST"): _rotate_pod_logs,
    ("/_sandbox/node-faults", "POST"): _post_node_fault,
    ("/_sandbox/device-faults", "POST"): _post_device_fault,
}


def _route(path: str, method: str) -> tuple[Route | None, bool]:
    """The handler for ``path`` and ``method``, and whether the path exists at all."""
    path = path.rstrip("/") or "/"
    if path.startswith("/_sandbox/faults/"):
        path = "/_sandbox/faults" if method == "DELETE" else path
    methods = {m: route for (p, m), route in _ROUTES.items() if p == path}
    return methods.get(method), bool(methods)


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The control API as a WSGI application."""
    request = Request(environ)
    route, exists = _route(request.path, request.method)
    if route is None:
        status, payload = (405, {"error": "method not allowed"}) if exists else (404, {"error": "not found"})
    else:
        try:
            status, payload = route(request)
        except _NotFound as error:
            status, payload = 404, {"error": str(error)}
        except (ValueError, KeyError, TypeError) as error:
            status, payload = 400, {"error": str(error)}
    response = Response(json.dumps(payload, default=str), status=status, content_type="application/json")
    return response(environ, start_response)
