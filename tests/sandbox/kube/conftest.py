"""The Kubernetes emulator served over HTTPS once per session, reached with the official client.

``clusters`` is the fake AWS view the server consults on every request (tests may append to it);
each test starts with a fresh ``demo`` cluster whose training-operator add-on is ACTIVE.
"""

from __future__ import annotations

import base64
import functools
import json
import socket
from collections.abc import Callable, Iterator
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import boto3
import pytest
from kubernetes import client as k8s
from kubernetes.dynamic import DynamicClient

from sandbox import tls
from sandbox.kube import server, world
from sandbox.kube.access import Credential
from sandbox.kube.store import Store

REGION = "us-west-2"
CLUSTER = "demo"
TRAINING_OPERATOR = "amazon-sagemaker-hyperpod-training-operator"


#: The one credential the emulator run alone knows (it has no AWS side; ``sandbox.main`` asks moto's STS).
CREDENTIAL = Credential("AKIASANDBOXTEST", "sandbox-secret", None, "arn:aws:iam::123456789012:user/tester",
                        "arn:aws:iam::123456789012:user/tester")


def identify(access_key: str) -> Credential | None:
    return CREDENTIAL if access_key == CREDENTIAL.access_key else None


@functools.cache
def eks_token(cluster_name: str, region: str = REGION) -> str:
    """A bearer token built the way ``aws eks get-token`` builds it (valid 15 minutes: cached per session)."""
    sts = boto3.session.Session(aws_access_key_id=CREDENTIAL.access_key, aws_secret_access_key=CREDENTIAL.secret_key,
                                region_name=region).client("sts")

    def add_cluster_id(request, **_):
        request.headers["x-k8s-aws-id"] = cluster_name

    sts.meta.events.register("before-sign.sts.GetCallerIdentity", add_cluster_id)
    url = sts.generate_presigned_url("get_caller_identity", Params={}, ExpiresIn=60, HttpMethod="GET")
    return "k8s-aws-v1." + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def with_query(token: str, **changes: str) -> str:
    """``token`` with query parameters of its presigned URL replaced (to forge stale or malformed tokens)."""
    encoded = token.removeprefix("k8s-aws-v1.")
    url = urlsplit(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode())
    query = dict(parse_qsl(url.query))
    query.update(changes)
    forged = urlunsplit(url._replace(query=urlencode(query)))
    return "k8s-aws-v1." + base64.urlsafe_b64encode(forged.encode()).decode().rstrip("=")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def clusters() -> list[world.ClusterRef]:
    return []


@pytest.fixture(scope="session")
def kube(clusters) -> Iterator[server.KubeSandbox]:
    sandbox = server.start("127.0.0.1", _free_port(), lambda: list(clusters), identify)
    yield sandbox
    sandbox.stop()


@pytest.fixture(autouse=True)
def demo_cluster(clusters) -> Iterator[None]:
    clusters[:] = [world.ClusterRef(CLUSTER, REGION, "ACTIVE", frozenset({TRAINING_OPERATOR}))]
    world.forget_cluster(REGION, CLUSTER)
    yield
    world.forget_cluster(REGION, CLUSTER)


@pytest.fixture
def store() -> Store:
    """The demo cluster's store, synced like a first request would."""
    return world.sync_cluster(world.ClusterRef(CLUSTER, REGION, "ACTIVE", frozenset({TRAINING_OPERATOR})))


@pytest.fixture
def make_api(kube) -> Iterator[Callable[..., k8s.ApiClient]]:
    """``make_api(cluster=..., token=...)`` → an ``ApiClient`` for that cluster, verified with the sandbox CA."""
    made: list[k8s.ApiClient] = []

    def make(cluster: str = CLUSTER, *, token: str | None = "auto") -> k8s.ApiClient:
        configuration = k8s.Configuration(host=kube.url(REGION, cluster))
        configuration.ssl_ca_cert = str(tls.authority().cert_path.parent / "ca.pem")
        if token is not None:
            configuration.api_key["authorization"] = eks_token(cluster) if token == "auto" else token
            configuration.api_key_prefix["authorization"] = "Bearer"
        made.append(k8s.ApiClient(configuration))
        return made[-1]

    yield make
    for api_client in made:
        api_client.close()


@pytest.fixture
def api(make_api) -> k8s.ApiClient:
    return make_api()


@pytest.fixture
def core(api) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api)


@pytest.fixture
def apps(api) -> k8s.AppsV1Api:
    return k8s.AppsV1Api(api)


@pytest.fixture
def dynamic(api, tmp_path) -> DynamicClient:
    return DynamicClient(api, cache_file=str(tmp_path / "discovery.json"))


def raw(api: k8s.ApiClient, method: str, path: str, body: object = None, content_type: str = "application/json",
        query: dict[str, str] | None = None) -> tuple[int, object]:
    """One request through the client's transport, returning (HTTP status, decoded JSON or text)."""
    response = api.call_api(*api.param_serialize(method, path, auth_settings=["BearerToken"], body=body,
                                                 query_params=list((query or {}).items()),
                                                 header_params={"Content-Type": content_type}))
    response.read()
    text = response.data.decode()
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, text


def pod(name: str, *, labels: dict[str, str] | None = None, containers: tuple[str, ...] = ("main",)) -> dict:
    return {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": c, "image": "busybox:1.36"} for c in containers]}}


def deployment(name: str, replicas: int = 1) -> dict:
    labels = {"app": name}
    return {"metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}
