"""The MLflow gateway: MLflow's REST API (2.0) on a SageMaker managed tracking server, reached the way AWS's
``sagemaker-mlflow`` plugin reaches it.

* Endpoint: ``https://<region>.experiments.sagemaker.aws`` (``aws`` and ``aws-us-gov`` partitions), or the first of
  ``SAGEMAKER_MLFLOW_CUSTOM_ENDPOINT`` (the plugin's own override), ``AWS_ENDPOINT_URL_SAGEMAKER_MLFLOW`` and
  ``AWS_ENDPOINT_URL`` (boto3's variables; the sandbox serves the data plane there) that is set.
* Every request carries ``x-mlflow-sm-tracking-server-arn: <arn>`` (which server) and a SigV4 signature for the
  service ``sagemaker-mlflow`` in the server's region, made with botocore from the standard credential chain (the
  one ``cloud.aws`` clients use), with ``X-Amz-Content-SHA256`` as the plugin sends it.

Errors become the vocabulary's: MLflow's ``RESOURCE_DOES_NOT_EXIST`` (or a 404) is ``NotFound`` (``mlflow_not_found``),
``INVALID_PARAMETER_VALUE`` (or another 400) ``ValidationFailed``, 401/403 ``PermissionDenied``, 429 ``Throttled`` and
5xx or an unreachable endpoint a ``CloudError`` — those last three with ``provider["retryable"]`` true, so an
operation step that meets them is retried.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import botocore.session
import httpx
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from cloud.errors import classify, provider_error
from config.errors import ApplicationError, CloudError, NotFound, PermissionDenied, Throttled, ValidationFailed

SERVICE = "sagemaker-mlflow"
ARN_HEADER = "x-mlflow-sm-tracking-server-arn"
ENDPOINT_SETTINGS = ("SAGEMAKER_MLFLOW_CUSTOM_ENDPOINT", "AWS_ENDPOINT_URL_SAGEMAKER_MLFLOW", "AWS_ENDPOINT_URL")
API = "/api/2.0/mlflow"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)
HISTORY_PAGE = 10_000
_ARN = re.compile(r"arn:(aws[a-z-]*):sagemaker:([a-z0-9-]+):(\d{12}):"
                  r"mlflow-tracking-server/([a-zA-Z0-9](?:-*[a-zA-Z0-9])*)")


@dataclass(frozen=True)
class TrackingServerArn:
    """The parts of ``arn:<partition>:sagemaker:<region>:<account>:mlflow-tracking-server/<name>``."""

    arn: str
    partition: str
    region: str
    account: str
    name: str


def parse_arn(arn: str) -> TrackingServerArn | None:
    """The tracking server ARN's parts, or ``None`` when ``arn`` is not one."""
    match = _ARN.fullmatch(arn.strip())
    return TrackingServerArn(arn.strip(), *match.groups()) if match else None


def endpoint(arn: str) -> str:
    """The base URL MLflow requests for the server ``arn`` go to (see the module docstring)."""
    for name in ENDPOINT_SETTINGS:
        value = os.environ.get(name, "").strip()
        if value:
            return value.rstrip("/")
    parts = parse_arn(arn)
    if parts is None:
        raise ValidationFailed.for_field("arn", "invalid_arn", f"{arn} is not an MLflow tracking server ARN.")
    return f"https://{parts.region}.experiments.sagemaker.aws"


_lock = threading.Lock()
_credentials: dict[tuple[str, ...], Any] = {}


def _resolved_credentials() -> Any:
    """The standard chain's credentials, resolved once per credential-selecting environment (refreshable ones renew
    themselves)."""
    key = tuple(os.environ.get(name, "") for name in ("AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_ROLE_ARN",
                                                       "AWS_CONTAINER_CREDENTIALS_FULL_URI"))
    with _lock:
        if key not in _credentials:
            _credentials[key] = botocore.session.get_session().get_credentials()
        found = _credentials[key]
    if found is None:
        raise provider_error(CloudError, "cloud_credentials_missing", service=SERVICE, operation="sign",
                             provider_code="NoCredentials", provider_message="No AWS credentials were found.")
    return found


class MlflowClient:
    """MLflow REST calls against one tracking server (``arn``), signed for its region."""

    def __init__(self, arn: str, *, transport: httpx.BaseTransport | None = None):
        parts = parse_arn(arn)
        if parts is None:
            raise ValidationFailed.for_field("arn", "invalid_arn", f"{arn} is not an MLflow tracking server ARN.")
        self.arn, self.region, self.base = parts.arn, parts.region, endpoint(arn)
        self._http = httpx.Client(timeout=TIMEOUT, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MlflowClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(self, method: str, path: str, *, params: dict[str, Any] | None = None,
             body: dict[str, Any] | None = None) -> dict[str, Any]:
        """One signed request to ``/api/2.0/mlflow/<path>``; its JSON answer, or the vocabulary error."""
        query = urlencode({k: v for k, v in (params or {}).items() if v is not None}, quote_via=quote)
        url = f"{self.base}{API}/{path}" + (f"?{query}" if query else "")
        data = json.dumps(body).encode() if body is not None else b""
        headers = {ARN_HEADER: self.arn, "X-Amz-Content-SHA256": hashlib.sha256(data).hexdigest()}
        if body is not None:
            headers["Content-Type"] = "application/json"
        request = AWSRequest(method=method, url=url, data=data, headers=headers)
        SigV4Auth(_resolved_credentials().get_frozen_credentials(), SERVICE, self.region).add_auth(request)
        try:
            response = self._http.request(method, url, content=data or None, headers=dict(request.headers.items()))
        except httpx.HTTPError as error:
            raise provider_error(CloudError, "cloud_unreachable", service=SERVICE, operation=path,
                                 provider_code=type(error).__name__, provider_message=str(error),
                                 retryable=True) from error
        if response.status_code >= 400:
            raise _translate(response, path)
        answer: dict[str, Any] = response.json() if response.content else {}
        return answer

    def experiment_by_name(self, name: str) -> dict[str, Any] | None:
        try:
            experiment: dict[str, Any] = self.call("GET", "experiments/get-by-name",
                                                   params={"experiment_name": name})["experiment"]
        except NotFound:
            return None
        return experiment

    def latest_run(self, experiment_id: str, run_name: str) -> dict[str, Any] | None:
        """The most recently started run named ``run_name`` in the experiment, or ``None``."""
        escaped = run_name.replace("'", "\\'")
        found = self.call("POST", "runs/search", body={
            "experiment_ids": [experiment_id], "filter": f"attributes.run_name = '{escaped}'", "max_results": 1,
            "order_by": ["attributes.start_time DESC"]}).get("runs") or []
        return found[0] if found else None

    def run(self, run_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.call("GET", "runs/get", params={"run_id": run_id})["run"]
        return found

    def metric_history(self, run_id: str, key: str) -> Iterator[dict[str, Any]]:
        """Every logged value of metric ``key`` of the run (``{"key", "value", "timestamp", "step"}``), page by page."""
        token = None
        while True:
            page = self.call("GET", "metrics/get-history", params={
                "run_id": run_id, "metric_key": key, "max_results": HISTORY_PAGE, "page_token": token})
            yield from page.get("metrics") or []
            token = page.get("next_page_token")
            if not token:
                return


def _translate(response: httpx.Response, operation: str) -> ApplicationError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    aws_code = (response.headers.get("x-amzn-ErrorType") or "").split(":")[0]
    provider_code = str(body.get("error_code") or aws_code or response.status_code)
    message = str(body.get("message") or body.get("Message") or response.text[:300])
    status = response.status_code
    common = {"service": SERVICE, "operation": operation, "provider_code": provider_code,
              "provider_message": message, "request_id": response.headers.get("x-amzn-RequestId", "")}
    if provider_code == "RESOURCE_DOES_NOT_EXIST" or (status == 404 and not aws_code):
        return provider_error(NotFound, "mlflow_not_found", **common)
    if aws_code:
        error_class, code = classify(aws_code)
        if error_class is not CloudError:
            return provider_error(error_class, code, retryable=code == "cloud_throttled", **common)
    if status == 429 or provider_code in ("REQUEST_LIMIT_EXCEEDED", "TEMPORARILY_UNAVAILABLE"):
        return provider_error(Throttled, "cloud_throttled", retryable=True, **common)
    if status in (401, 403) or provider_code == "PERMISSION_DENIED":
        return provider_error(PermissionDenied, "cloud_access_denied", **common)
    if status >= 500:
        return provider_error(CloudError, "cloud_error", retryable=True, **common)
    return provider_error(ValidationFailed, "cloud_validation", **common)
