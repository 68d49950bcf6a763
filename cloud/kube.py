"""The Kubernetes gateway: an authenticated ``ApiClient`` per EKS cluster, and Kubernetes error translation.

Authentication is what ``aws eks get-token`` does: a presigned STS ``GetCallerIdentity`` URL whose signature
covers the header ``x-k8s-aws-id: <cluster name>``, base64url-encoded behind ``k8s-aws-v1.``. EKS accepts it
for 15 minutes; we refresh it after ``TOKEN_REUSE`` through the client's ``refresh_api_key_hook``, so a
long-lived ``ApiClient`` never sends an expired token. The endpoint and CA come from ``eks.describe_cluster``
and are verified like any TLS server — the sandbox's EKS endpoints are real HTTPS servers with their own CA.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity
from urllib3.exceptions import HTTPError

from cloud import aws, dry_run
from cloud.errors import provider_error
from config.errors import (
    ApplicationError,
    CloudError,
    Conflict,
    NotFound,
    PermissionDenied,
    Throttled,
    ValidationFailed,
)

TOKEN_PREFIX = "k8s-aws-v1."
PRESIGN_EXPIRES = 60
#: EKS honours a token for 15 minutes; stop reusing it well before.
TOKEN_REUSE = 10 * 60
CLUSTER_ID_HEADER = "x-k8s-aws-id"
#: EKS statuses in which the API server answers.
SERVING_STATUSES = frozenset({"ACTIVE", "UPDATING"})

#: Clients built by the cache, so forgetting them also removes their CA files.
_api_clients_built: list[k8s.ApiClient] = []


@dataclass(frozen=True)
class EksToken:
    value: str
    issued_at: float

    @property
    def fresh(self) -> bool:
        return time.monotonic() - self.issued_at < TOKEN_REUSE


def eks_token(cluster_name: str, *, region: str, credentials: aws.Credentials | None = None) -> EksToken:
    """A bearer token for ``cluster_name``, built exactly as ``aws eks get-token`` builds it."""
    sts = aws.session(region=region, credentials=credentials).client("sts", config=aws.client_config())

    def add_cluster_id(request: Any, **_: Any) -> None:
        request.headers[CLUSTER_ID_HEADER] = cluster_name

    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_cluster_id)
    with aws.translated("sts", "GetCallerIdentity"):
        url = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=PRESIGN_EXPIRES,
                                         HttpMethod="GET")
    encoded = base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")
    return EksToken(value=TOKEN_PREFIX + encoded, issued_at=time.monotonic())


@dataclass(frozen=True)
class ClusterAccess:
    """What ``describe_cluster`` tells us about reaching the API server."""

    endpoint: str
    ca_file: str


def describe_access(cluster_name: str, *, region: str, credentials: aws.Credentials | None = None) -> ClusterAccess:
    eks = aws.client("eks", region=region, credentials=credentials)
    with aws.translated("eks", "DescribeCluster"):
        cluster = eks.describe_cluster(name=cluster_name)["cluster"]
    endpoint = cluster.get("endpoint")
    ca_data = cluster.get("certificateAuthority", {}).get("data")
    if cluster.get("status") not in SERVING_STATUSES or not endpoint or not ca_data:
        raise CloudError(f"EKS cluster {cluster_name} has no API endpoint yet (status {cluster.get('status')}).",
                         code="cluster_not_ready")
    with tempfile.NamedTemporaryFile("wb", prefix=f"eks-{cluster_name}-", suffix=".pem", delete=False) as ca_file:
        ca_file.write(base64.b64decode(ca_data))
    return ClusterAccess(endpoint=endpoint, ca_file=ca_file.name)


@functools.lru_cache(maxsize=128)
def _cached_api_client(cluster_name: str, region: str, credentials: aws.Credentials | None) -> k8s.ApiClient:
    access = describe_access(cluster_name, region=region, credentials=credentials)
    configuration = k8s.Configuration(host=access.endpoint)
    configuration.ssl_ca_cert = access.ca_file
    configuration.api_key_prefix["authorization"] = "Bearer"
    token_box: list[EksToken] = []

    def refresh(config: k8s.Configuration) -> None:
        if not token_box or not token_box[0].fresh:
            token_box[:] = [eks_token(cluster_name, region=region, credentials=credentials)]
            config.api_key["authorization"] = token_box[0].value

    refresh(configuration)
    configuration.refresh_api_key_hook = refresh  # type: ignore[assignment]  # kubernetes types the hook as None
    client = dry_run.GuardedApiClient(configuration)
    _api_clients_built.append(client)
    return client


def api_client(cluster_name: str, *, region: str, credentials: aws.Credentials | None = None) -> k8s.ApiClient:
    """An ``ApiClient`` for the EKS cluster (cached; the token refreshes itself before it expires).

    No lock is held around ``describe_cluster``: one slow cluster must not stall clients of the others. Two
    threads filling the same entry at once both build a client and the cache keeps one; both work."""
    return _cached_api_client(cluster_name, region, credentials)


def forget_api_clients() -> None:
    """Drop cached clients (and their CA files), e.g. after a cluster was deleted and recreated."""
    for client in _api_clients_built:
        with contextlib.suppress(OSError):
            os.unlink(client.configuration.ssl_ca_cert)
    _api_clients_built.clear()
    _cached_api_client.cache_clear()


_STATUS_CLASSES: dict[int, tuple[type[ApplicationError], str]] = {
    400: (ValidationFailed, "kube_bad_request"),
    401: (PermissionDenied, "kube_unauthorized"),
    403: (PermissionDenied, "kube_forbidden"),
    404: (NotFound, "kube_not_found"),
    409: (Conflict, "kube_conflict"),
    410: (Conflict, "kube_gone"),
    422: (ValidationFailed, "kube_invalid"),
    429: (Throttled, "kube_throttled"),
}


def translate(error: Exception, *, operation: str = "") -> ApplicationError:
    """The vocabulary error for a Kubernetes client failure, keeping the API server's Status message.

    A 422 ``Invalid`` maps its ``details.causes`` to field errors (code ``kube_invalid``)."""
    if isinstance(error, ApiException):
        try:
            status = json.loads(error.body or "{}")
        except ValueError:
            status = {}
        error_class, code = _STATUS_CLASSES.get(error.status, (CloudError, "kube_error"))
        translated = provider_error(
            error_class, code, service="kubernetes", operation=operation,
            provider_code=str(status.get("reason") or error.reason or error.status),
            provider_message=str(status.get("message") or error.reason or ""),
            retryable=error.status in (429, 500, 502, 503, 504),
        )
        for cause in (status.get("details") or {}).get("causes") or []:
            translated.fields.setdefault(cause.get("field") or "non_field_errors", []).append(
                {"code": cause.get("reason") or code, "message": cause.get("message", "")}
            )
        return translated
    if isinstance(error, HTTPError | OSError):
        return provider_error(CloudError, "kube_unreachable", service="kubernetes", operation=operation,
                              provider_code=type(error).__name__, provider_message=str(error), retryable=True)
    return provider_error(CloudError, "kube_error", service="kubernetes", operation=operation,
                          provider_code=type(error).__name__, provider_message=str(error))


@contextlib.contextmanager
def translated(operation: str = "") -> Iterator[None]:
    """Run Kubernetes calls, raising their failures (API server answers, unreachable servers) as vocabulary errors::

        with kube.translated("create rayjobs.ray.io"):
            custom.create_namespaced_custom_object(...)
    """
    try:
        yield
    except (ApiException, HTTPError, OSError) as error:
        raise translate(error, operation=operation) from error


def quantity(value: Any) -> Decimal:
    """A Kubernetes quantity (``"500m"``, ``"16Gi"``, ``8``) as a number; ``0`` for none, or one that does not parse."""
    try:
        return Decimal(parse_quantity(value))  # type: ignore[no-untyped-call]  # kubernetes.utils is not annotated
    except (TypeError, ValueError):
        return Decimal(0)


def meta(obj: Any) -> k8s.V1ObjectMeta:
    """The metadata of an object the API server returned: it always carries one (the client's models type every
    field as optional)."""
    metadata: k8s.V1ObjectMeta | None = obj.metadata
    if metadata is None:
        raise ValueError(f"a {type(obj).__name__} without metadata")
    return metadata


def name(obj: Any) -> str:
    """The name of an object the API server returned (always set)."""
    return meta(obj).name or ""
