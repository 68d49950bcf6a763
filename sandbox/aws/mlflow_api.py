"""The SageMaker managed MLflow data plane: ``/api/2.0/mlflow/...`` on the AWS port.

Real clients (the ``sagemaker-mlflow`` plugin) send the MLflow REST API to
``https://<region>.experiments.sagemaker.aws`` with a SigV4 ``Authorization`` (service ``sagemaker-mlflow``) and
``x-mlflow-sm-tracking-server-arn: <tracking server ARN>``; in the sandbox the same requests go to
``$AWS_ENDPOINT_URL``. Checks, in order (MLflow-style ``{"error_code", "message"}`` bodies):

- ``Authorization`` is ``AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/sagemaker-mlflow/aws4_request, …``
  (the signature is not verified) — else 403 ``PERMISSION_DENIED``;
- the ARN header is present (400 ``INVALID_PARAMETER_VALUE``), names a tracking server (404
  ``RESOURCE_DOES_NOT_EXIST``) in the signing region (403) whose status is active (503
  ``TEMPORARILY_UNAVAILABLE`` otherwise: Creating, Stopped …);
- the endpoint exists (404 ``ENDPOINT_NOT_FOUND``) and is called with its method (405).

GET endpoints read query parameters, POST ones a JSON body. See docs/sandbox-aws.md for the endpoints.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.wrappers import Request, Response

from sandbox.aws import core
from sandbox.aws import mlflow_search as search
from sandbox.aws.mlflow_tracking import (
    RUN_STATUSES,
    Metric,
    MlflowError,
    Tracking,
    experiment_json,
    log_metric,
    metric_json,
    run_info_json,
    run_json,
    set_tag,
    tracking,
)

PREFIX = "/api/2.0/mlflow/"
ARN_HEADER = "x-mlflow-sm-tracking-server-arn"
SERVICE = "sagemaker-mlflow"
SEARCH_MAX_RESULTS = 50_000
BATCH_LIMIT = 1000
_CREDENTIAL = re.compile(r"^AWS4-HMAC-SHA256 .*Credential=[^/,\s]+/\d{8}/([^/]+)/([^/]+)/aws4_request")

Handler = Callable[[Tracking, dict[str, Any]], dict[str, Any]]


def _required(params: dict[str, Any], name: str, alias: str | None = None) -> Any:
    value = params.get(name, params.get(alias) if alias else None)
    if value in (None, ""):
        raise MlflowError("INVALID_PARAMETER_VALUE", f"Missing value for required parameter '{name}'. See the API "
                                                     "docs for more information about request parameters.")
    return value


def _int(params: dict[str, Any], name: str, default: int | None) -> int | None:
    value = params.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        raise MlflowError("INVALID_PARAMETER_VALUE", f"Invalid value {value!r} for parameter '{name}'") from None


def _pairs(entries: Any) -> dict[str, str]:
    return {str(entry["key"]): str(entry.get("value", "")) for entry in entries or []}


def _create_experiment(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    experiment = data.create_experiment(str(_required(params, "name")), params.get("artifact_location"),
                                        _pairs(params.get("tags")))
    return {"experiment_id": experiment.experiment_id}


def _get_experiment(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    return {"experiment": experiment_json(data.experiment(str(_required(params, "experiment_id"))))}


def _get_experiment_by_name(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    name = str(_required(params, "experiment_name"))
    experiment = data.by_name(name)
    if experiment is None:
        raise MlflowError("RESOURCE_DOES_NOT_EXIST", f"Could not find experiment with name '{name}'", 404)
    return {"experiment": experiment_json(experiment)}


def _create_run(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    run = data.create_run(str(_required(params, "experiment_id")), params.get("run_name"),
                          _int(params, "start_time", None), _pairs(params.get("tags")), str(params.get("user_id", "")))
    return {"run": run_json(run)}


def _get_run(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    return {"run": run_json(data.run(str(_required(params, "run_id", "run_uuid"))))}


def _search_runs(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    ids = [str(i) for i in params.get("experiment_ids") or []]
    for experiment_id in ids:
        data.experiment(experiment_id)
    max_results = _int(params, "max_results", 1000) or 1000
    if not 0 < max_results <= SEARCH_MAX_RESULTS:
        raise MlflowError("INVALID_PARAMETER_VALUE", f"Invalid value {max_results} for parameter 'max_results' "
                                                     f"supplied. It must be at most {SEARCH_MAX_RESULTS}")
    view = str(params.get("run_view_type") or "ACTIVE_ONLY")
    stages = {"ACTIVE_ONLY": ("active",), "DELETED_ONLY": ("deleted",), "ALL": ("active", "deleted")}.get(view)
    if stages is None:
        raise MlflowError("INVALID_PARAMETER_VALUE", f"Invalid value {view!r} for parameter 'run_view_type'")
    predicates = search.parse_filter(params.get("filter"))
    runs = [run for run in data.runs.values() if run.experiment_id in ids and run.lifecycle_stage in stages
            and all(predicate(run) for predicate in predicates)]
    chunk, token = search.page(search.sort(runs, params.get("order_by")), max_results, params.get("page_token"))
    return {key: value for key, value in (("runs", [run_json(run) for run in chunk]), ("next_page_token", token))
            if value}


def _update_run(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    run = data.run(str(_required(params, "run_id", "run_uuid")))
    status = params.get("status")
    if status is not None:
        if status not in RUN_STATUSES:
            raise MlflowError("INVALID_PARAMETER_VALUE", f"Invalid value {status!r} for parameter 'status'")
        run.status = status
    run.end_time = _int(params, "end_time", run.end_time)
    if params.get("run_name"):
        set_tag(run, "mlflow.runName", str(params["run_name"]))
    return {"run_info": run_info_json(run)}


def _metric(entry: dict[str, Any]) -> Metric:
    try:
        return Metric(str(_required(entry, "key")), float(_required(entry, "value")),
                      int(_required(entry, "timestamp")), int(entry.get("step") or 0))
    except (TypeError, ValueError):
        raise MlflowError("INVALID_PARAMETER_VALUE", f"Invalid metric {entry!r}") from None


def _log_metric(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    log_metric(data.run(str(_required(params, "run_id", "run_uuid"))), _metric(params))
    return {}


def _log_batch(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    run = data.run(str(_required(params, "run_id")))
    metrics, run_params, tags = (params.get(key) or [] for key in ("metrics", "params", "tags"))
    if len(metrics) + len(run_params) + len(tags) > BATCH_LIMIT or len(run_params) > 100 or len(tags) > 100:
        raise MlflowError("INVALID_PARAMETER_VALUE", "A batch logging request can contain at most 1000 metrics, "
                                                     "100 params and 100 tags (1000 entities in total)")
    for key, value in _pairs(run_params).items():
        if run.params.get(key, value) != value:
            raise MlflowError("INVALID_PARAMETER_VALUE", f"Changing param values is not allowed. Param with key="
                                                         f"'{key}' was already logged with value="
                                                         f"'{run.params[key]}' for run ID='{run.run_id}'. Attempted "
                                                         f"logging new value '{value}'.")
    parsed = [_metric(entry) for entry in metrics]
    run.params.update(_pairs(run_params))
    for key, value in _pairs(tags).items():
        set_tag(run, key, value)
    for metric in parsed:
        log_metric(run, metric)
    return {}


def _set_tag(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    set_tag(data.run(str(_required(params, "run_id", "run_uuid"))), str(_required(params, "key")),
            str(params.get("value", "")))
    return {}


def _metric_history(data: Tracking, params: dict[str, Any]) -> dict[str, Any]:
    run = data.run(str(_required(params, "run_id", "run_uuid")))
    history = run.metrics.get(str(_required(params, "metric_key")), [])
    chunk, token = search.page(history, _int(params, "max_results", None) or len(history) or 1,
                               params.get("page_token"))
    return {key: value for key, value in (("metrics", [metric_json(m) for m in chunk]), ("next_page_token", token))
            if value}


ENDPOINTS: dict[str, tuple[str, Handler]] = {
    "experiments/create": ("POST", _create_experiment),
    "experiments/get": ("GET", _get_experiment),
    "experiments/get-by-name": ("GET", _get_experiment_by_name),
    "runs/create": ("POST", _create_run),
    "runs/get": ("GET", _get_run),
    "runs/search": ("POST", _search_runs),
    "runs/update": ("POST", _update_run),
    "runs/log-metric": ("POST", _log_metric),
    "runs/log-batch": ("POST", _log_batch),
    "runs/set-tag": ("POST", _set_tag),
    "metrics/get-history": ("GET", _metric_history),
}


def _params(request: Request) -> dict[str, Any]:
    if request.method == "GET":
        return {key: values if len(values) > 1 else values[0] for key, values in request.args.lists()}
    try:
        body = json.loads(request.get_data() or b"{}")
    except ValueError:
        raise MlflowError("MALFORMED_REQUEST", "Request body is not valid JSON") from None
    if not isinstance(body, dict):
        raise MlflowError("MALFORMED_REQUEST", "Request body must be a JSON object")
    return body


def _authorize(request: Request) -> str:
    """The tracking server ARN of a well-signed request (see the module docstring)."""
    credential = _CREDENTIAL.match(request.headers.get("Authorization", ""))
    if credential is None:
        raise MlflowError("PERMISSION_DENIED", "Missing Authentication Token: requests must be signed with SigV4 "
                                               f"for service '{SERVICE}'", 403)
    region, service = credential.groups()
    if service != SERVICE:
        raise MlflowError("PERMISSION_DENIED", f"Credential should be scoped to correct service: '{SERVICE}'.", 403)
    arn = request.headers.get(ARN_HEADER, "")
    if not arn:
        raise MlflowError("INVALID_PARAMETER_VALUE", f"Missing header {ARN_HEADER}", 400)
    arn_region = arn.split(":")[3] if arn.count(":") >= 5 else ""
    if arn_region and arn_region != region:
        raise MlflowError("PERMISSION_DENIED", f"Credential should be scoped to a valid region: '{arn_region}'.", 403)
    return arn


def _serve(request: Request) -> tuple[int, dict[str, Any]]:
    arn = _authorize(request)
    with core.transaction():
        data = tracking(arn)
        endpoint = ENDPOINTS.get(request.path.removeprefix(PREFIX).strip("/"))
        if endpoint is None:
            raise MlflowError("ENDPOINT_NOT_FOUND", f"No API endpoint {request.method} {request.path}", 404)
        method, handler = endpoint
        if request.method != method:
            raise MlflowError("BAD_REQUEST", f"The method {request.method} is not allowed for {request.path}", 405)
        return 200, handler(data, _params(request))


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """The data plane as a WSGI application."""
    try:
        status, payload = _serve(Request(environ))
    except MlflowError as error:
        status, payload = error.status, error.body()
    response = Response(json.dumps(payload), status=status, content_type="application/json")
    return response(environ, start_response)
