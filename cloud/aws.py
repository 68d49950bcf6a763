"""The AWS gateway: cached boto3 clients and the translation of AWS errors into the error vocabulary.

Endpoints come from boto3's own configuration (``AWS_ENDPOINT_URL`` / ``AWS_ENDPOINT_URL_<SERVICE>``), so the
offline sandbox needs no special code here. Clients use botocore's adaptive retry mode (client-side rate
limiting plus exponential backoff on throttling) and are cached per (service, region, credentials) and per the
``AWS_*`` environment they were configured from (endpoint, key, profile: a client made for one keeps pointing at it):
boto3 clients are thread-safe, sessions are not, so each cache entry gets its own session.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import boto3
import botocore.loaders
import botocore.session
from botocore.client import BaseClient
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError, NoCredentialsError

from cloud import dry_run, metrics
from cloud.errors import classify, provider_error
from config.errors import ApplicationError, CloudError

#: Attempts per call, the first included.
RETRY_ATTEMPTS = 8
_lock = threading.Lock()


@dataclass(frozen=True)
class Credentials:
    """Explicit credentials (e.g. from an assumed role). ``None`` in calls means boto3's standard chain."""

    access_key_id: str
    secret_access_key: str
    session_token: str | None = None

    def __repr__(self) -> str:
        return f"Credentials(access_key_id={self.access_key_id[:4]}…)"


def client_config() -> Config:
    return Config(
        retries={"mode": "adaptive", "total_max_attempts": RETRY_ATTEMPTS},
        user_agent_extra="instantstart",
        connect_timeout=10,
        read_timeout=60,
    )


@functools.cache
def _service_model_loader() -> botocore.loaders.Loader:
    """One loader of botocore's service models for every session: parsing a model (EC2's is megabytes of JSON) is
    the bulk of creating a client, and the models never change while the process runs."""
    return botocore.loaders.create_loader()


def session(*, region: str, credentials: Credentials | None = None) -> boto3.session.Session:
    """A boto3 session in ``region`` with ``credentials`` (``None``: the default chain) that shares the process's
    one loader of botocore's data, so making it parses no model or endpoint file again."""
    core = botocore.session.get_session()
    core.register_component("data_loader", _service_model_loader())
    return boto3.session.Session(
        aws_access_key_id=credentials.access_key_id if credentials else None,
        aws_secret_access_key=credentials.secret_access_key if credentials else None,
        aws_session_token=credentials.session_token if credentials else None,
        region_name=region,
        botocore_session=core,
    )


#: The environment variables botocore reads when it makes a client: a client answers for the values it was made with.
CLIENT_ENVIRONMENT = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                      "AWS_PROFILE", "AWS_CA_BUNDLE")


def _environment() -> tuple[str | None, ...]:
    return tuple(os.environ.get(name) for name in CLIENT_ENVIRONMENT)


@functools.lru_cache(maxsize=256)
def _cached_client(service: str, region: str, credentials: Credentials | None,
                   environment: tuple[str | None, ...]) -> BaseClient:
    made = session(region=region, credentials=credentials).client(service, config=client_config())
    return metrics.count_calls(dry_run.guard_aws_client(made))


#: The AWS services the product calls (what :func:`preload_models` reads ahead).
SERVICES = ("eks", "sagemaker", "iam", "s3", "ec2", "sts", "sqs", "events", "fsx", "amp", "service-quotas", "pricing")


def preload_models(services: tuple[str, ...] = SERVICES) -> None:
    """Read these services' models, and the endpoint data every client reads, into the shared loader now.

    A Celery worker calls it before it forks its pool: the pool's processes then share what was parsed here instead
    of each parsing megabytes of JSON on its first call of a service (a quarter of a saturated worker's CPU in its
    first half-minute)."""
    for service in services:
        session(region=default_region()).client(service, config=client_config())


def client(service: str, *, region: str, credentials: Credentials | None = None) -> BaseClient:
    """A boto3 client for ``service`` in ``region`` (cached per credentials and ``AWS_*`` environment; safe to share
    between threads)."""
    with _lock:
        return _cached_client(service, region, credentials, _environment())


def forget_clients() -> None:
    """Drop cached clients and account ids (after credentials rotate, or when tests change the endpoint)."""
    with _lock:
        _cached_client.cache_clear()
        _account_id.cache_clear()


def default_region() -> str:
    """The deployment's region: ``AWS_REGION`` or ``AWS_DEFAULT_REGION``, else ``us-west-2``."""
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-west-2"


def account_id(*, region: str, credentials: Credentials | None = None) -> str:
    """The AWS account the credentials belong to (STS ``GetCallerIdentity``, asked once per process)."""
    return _account_id(region, credentials, _environment())


@functools.lru_cache(maxsize=64)
def _account_id(region: str, credentials: Credentials | None, environment: tuple[str | None, ...]) -> str:
    with translated("sts", "GetCallerIdentity"):
        account: str = client("sts", region=region, credentials=credentials).get_caller_identity()["Account"]
    return account


def error_is(error: ClientError, *codes: str) -> bool:
    """True when AWS answered ``error`` with one of ``codes``."""
    return error.response.get("Error", {}).get("Code") in codes


_PRINCIPAL = re.compile(r"arn:([^:]+):(?:sts|iam)::(\d{12}):(.+)")


def principal_arn(*, region: str, credentials: Credentials | None = None) -> str:
    """The IAM principal the credentials act as, in the form IAM policies and EKS access entries take: an assumed
    role's session (``…:sts::<account>:assumed-role/Name/session``) becomes the role's ARN
    (``…:iam::<account>:role/Name``; a role path is not recoverable from STS), a user reported under ``sts`` its IAM
    ARN."""
    with translated("sts", "GetCallerIdentity"):
        arn: str = client("sts", region=region, credentials=credentials).get_caller_identity()["Arn"]
    match = _PRINCIPAL.fullmatch(arn)
    if match is None:
        return arn
    partition, account, resource = match.groups()
    if resource.startswith("assumed-role/"):
        return f"arn:{partition}:iam::{account}:role/{resource.split('/')[1]}"
    return f"arn:{partition}:iam::{account}:{resource}"


@functools.cache
def partition(region: str) -> str:
    """The ARN partition of ``region`` (``aws``, ``aws-cn``, ``aws-us-gov``…), from botocore's endpoint data (read
    once per region: a new session parses the whole endpoint file)."""
    name: str = boto3.session.Session().get_partition_for_region(region)
    return name


@functools.cache
def service_regions(service: str) -> tuple[str, ...]:
    """The regions of the AWS partition where ``service`` runs, from botocore's endpoint data, sorted (read once)."""
    return tuple(sorted(boto3.session.Session().get_available_regions(service)))


def translate(error: Exception, *, service: str = "aws", operation: str = "") -> ApplicationError:
    """The vocabulary error for a botocore exception, keeping AWS's code, message and request id."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        provider_code = str(details.get("Code", "Unknown"))
        error_class, code = classify(provider_code)
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return provider_error(
            error_class, code, service=service, operation=operation or error.operation_name,
            provider_code=provider_code, provider_message=str(details.get("Message", "")),
            request_id=error.response.get("ResponseMetadata", {}).get("RequestId", ""),
            retryable=code == "cloud_throttled" or status >= 500,
        )
    if isinstance(error, NoCredentialsError):
        return provider_error(CloudError, "cloud_credentials_missing", service=service, operation=operation,
                              provider_code="NoCredentials", provider_message=str(error))
    if isinstance(error, EndpointConnectionError):
        return provider_error(CloudError, "cloud_unreachable", service=service, operation=operation,
                              provider_code="EndpointConnectionError", provider_message=str(error), retryable=True)
    return provider_error(CloudError, "cloud_error", service=service, operation=operation,
                          provider_code=type(error).__name__, provider_message=str(error), retryable=True)


def role_not_yet_assumable(error: ClientError, role_arn: str, *, code: str, service: str,
                           operation: str) -> ApplicationError | None:
    """A role made moments ago may not be assumable yet (IAM is eventually consistent), and the service refuses it
    with ``code`` in a message naming it: that refusal as a retryable vocabulary error, so the engine tries the step
    again later; ``None`` for any other error."""
    if not error_is(error, code) or role_arn not in error.response.get("Error", {}).get("Message", ""):
        return None
    later = translate(error, service=service, operation=operation)
    later.provider["retryable"] = True
    return later


@contextlib.contextmanager
def translated(service: str, operation: str = "") -> Iterator[None]:
    """Run AWS calls, raising their failures as vocabulary errors::

        with aws.translated("sagemaker", "CreateCluster"):
            sagemaker.create_cluster(...)
    """
    try:
        yield
    except (ClientError, BotoCoreError) as error:
        raise translate(error, service=service, operation=operation) from error
