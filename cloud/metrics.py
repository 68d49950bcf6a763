"""Cloud call metrics, counted by botocore event handlers on every client the gateway creates.

``instantstart_cloud_calls{service, operation, error}`` counts each finished call (``error`` is AWS's error code,
empty on success); ``instantstart_cloud_throttles{service, operation}`` counts throttled attempts, retried or not
(one call may be throttled several times before it succeeds). Served by ``config.metrics`` at ``/metrics``.
"""

from __future__ import annotations

from typing import Any

from botocore.client import BaseClient
from prometheus_client import Counter

CLOUD_CALLS = Counter("instantstart_cloud_calls", "AWS API calls by service, operation and error code.",
                      ["service", "operation", "error"])
CLOUD_THROTTLES = Counter("instantstart_cloud_throttles", "Throttled AWS API attempts by service and operation.",
                          ["service", "operation"])
#: The error codes botocore's retry handler treats as throttling.
THROTTLING_CODES = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException", "TooManyRequestsException",
    "ProvisionedThroughputExceededException", "TransactionInProgressException", "RequestLimitExceeded",
    "BandwidthLimitExceeded", "LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
    "EC2ThrottledException"})


def count_calls(client: BaseClient) -> BaseClient:
    """Make ``client`` count its calls and throttled attempts (``after-call`` and ``needs-retry`` handlers)."""
    service = client.meta.service_model.service_name
    client.meta.events.register("after-call", _after_call(service))
    client.meta.events.register("needs-retry", _needs_retry(service))
    return client


def _error_code(parsed: Any) -> str:
    return str(parsed.get("Error", {}).get("Code", "")) if isinstance(parsed, dict) else ""


def _after_call(service: str) -> Any:
    def handler(http_response: Any, parsed: Any, model: Any, **_: Any) -> None:
        CLOUD_CALLS.labels(service, model.name, _error_code(parsed)).inc()
    return handler


def _needs_retry(service: str) -> Any:
    def handler(response: Any, operation: Any, **_: Any) -> None:
        if response is not None and _error_code(response[1]) in THROTTLING_CODES:
            CLOUD_THROTTLES.labels(service, operation.name).inc()
    return handler
