"""Shared fixtures: users in every role, teams, API clients authenticated by token or session."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import httpx
import pytest
from botocore.retries.standard import ExponentialBackoff
from django.core.cache import cache
from django.test import Client, override_settings

from accounts import services
from accounts.models import Membership, Role, Team, User
from cloud import aws, kube
from config.context import Source

_counter = itertools.count(1)

#: moto fills every EC2 backend it creates — after each ``sandbox`` reset, per region — with 1,300 default AMIs: about
#: a second per test on this machine. Nothing in InstantStart reads EC2 images (HyperPod's ``ImageId`` is its own).
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
#: A role a test makes with boto3 is assumable at once; the tests of IAM's propagation delay set it themselves
#: (``PUT /_sandbox/iam``), as does the product's retry test.
os.environ.setdefault("INSTANTSTART_SANDBOX_IAM_PROPAGATION_SECONDS", "0")


@pytest.fixture(autouse=True)
def _fast_and_isolated(settings):
    """A cheap password hasher (the suite creates hundreds of users) and no throttle state between tests."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()


@pytest.fixture
def open_team_creation(settings):
    """Team creation open to anyone signed in (``INSTANTSTART_TEAM_CREATION=anyone``), for tests of creating a team
    that are not about who may."""
    settings.INSTANTSTART_TEAM_CREATION = "anyone"


@pytest.fixture
def make_user(db) -> Callable[..., User]:
    def make(username: str | None = None, *, password: str = "correct-horse-battery", **extra) -> User:
        username = username or f"user{next(_counter)}"
        return User.objects.create_user(username=username, email=f"{username}@example.com", password=password, **extra)

    return make


@pytest.fixture
def make_team(db, make_user) -> Callable[..., Team]:
    def make(name: str | None = None, *, admin: User | None = None) -> Team:
        """A team made by ``admin`` (its admin) as if team creation were open to anyone; the policy's own tests
        (tests/accounts/test_team_creation.py) leave the default in force."""
        name = name or f"Team {next(_counter)}"
        admin = admin or make_user()
        slug = name.lower().replace(" ", "-")
        with override_settings(INSTANTSTART_TEAM_CREATION="anyone"):
            return services.team_create(actor=admin, name=name, slug=slug, source=Source.SYSTEM)

    return make


@dataclass
class Cast:
    """One team and a user in every relationship to it (the permission matrix's rows)."""

    team: Team
    admin: User
    operator: User
    viewer: User
    outsider: User
    superuser: User

    def __getitem__(self, name: str) -> User | None:
        return None if name == "anonymous" else getattr(self, name)


@pytest.fixture
def cast(make_user, make_team) -> Cast:
    admin = make_user("ada")
    team = make_team("Vision", admin=admin)
    operator, viewer = make_user("otto"), make_user("vera")
    Membership.objects.create(team=team, user=operator, role=Role.OPERATOR)
    Membership.objects.create(team=team, user=viewer, role=Role.VIEWER)
    outsider = make_user("olga")
    make_team("Speech", admin=outsider)
    superuser = make_user("root", is_superuser=True, is_staff=True)
    return Cast(team=team, admin=admin, operator=operator, viewer=viewer, outsider=outsider, superuser=superuser)


class ApiClient:
    """JSON over the real Django request stack, authenticated with a real API token."""

    def __init__(self, secret: str | None):
        self.client = Client()
        self.headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"} if secret else {}

    def request(self, method: str, path: str, body=None, **headers):
        kwargs = dict(self.headers, **headers)
        if body is not None:
            kwargs["data"] = body if isinstance(body, str | bytes) else json.dumps(body)
            kwargs["content_type"] = "application/json"
        return getattr(self.client, method.lower())(path, **kwargs)

    def get(self, path: str, **params):
        return self.client.get(path, params, **self.headers)

    def post(self, path: str, body=None, **headers):
        return self.request("POST", path, body, **headers)

    def patch(self, path: str, body=None, **headers):
        return self.request("PATCH", path, body, **headers)

    def delete(self, path: str, **headers):
        return self.request("DELETE", path, None, **headers)


@pytest.fixture
def token_for(db) -> Callable[..., str]:
    def issue(user: User, *, read_only: bool = False) -> str:
        return services.token_create(actor=user, name="test", read_only=read_only, source=Source.SYSTEM).secret

    return issue


@pytest.fixture
def api(token_for) -> Callable[..., ApiClient]:
    """``api(user)`` → a client with a fresh token for ``user``; ``api(None)`` → anonymous."""

    def client(user: User | None, *, read_only: bool = False) -> ApiClient:
        return ApiClient(token_for(user, read_only=read_only) if user else None)

    return client


@pytest.fixture(scope="session")
def sandbox_world(tmp_path_factory):
    """The whole sandbox (AWS, Kubernetes emulator, simulator), started once per session on free ports.

    It runs on threads of the test process, but the product reaches it only over HTTP with the real boto3
    and kubernetes clients. Its certificate authority lives in a temporary state directory.
    """
    os.environ.setdefault("INSTANTSTART_SANDBOX_STATE_DIR", str(tmp_path_factory.mktemp("sandbox-state")))
    from sandbox.main import start_world

    world = start_world(aws_port=0, kube_port=0)
    yield world
    world.stop()


#: One HTTP client for the sandbox's control API: ``httpx.request`` builds a client, and with it a TLS context
#: that reads the CA bundle, on every call — a tenth of a permission-matrix test's time, twice per test.
SANDBOX_CONTROL = httpx.Client(timeout=10)


@dataclass
class SandboxHandle:
    aws_url: str

    def control(self, method: str, path: str, body=None):
        """Call the sandbox's control API (``/_sandbox/<path>``); raises on an error status."""
        response = SANDBOX_CONTROL.request(method, f"{self.aws_url}/_sandbox/{path}", json=body)
        response.raise_for_status()
        return response.json()


def sandbox_in_use(sandbox_world, monkeypatch: pytest.MonkeyPatch) -> Iterator[SandboxHandle]:
    """An empty sandbox world with boto3 pointed at it, time at 1/1000 of AWS's and botocore's retry backoff shrunk a
    hundredfold (its logic unchanged), until the generator ends (then the world is emptied again).

    boto3 clients outlive it (``cloud.aws`` caches them per ``AWS_*`` environment, the same for every test: making
    them is a tenth of a short sandbox test), except after a test that planned faults: a throttled client's adaptive
    rate limiter would slow the tests after it."""
    handle = SandboxHandle(aws_url=sandbox_world.aws_url)
    handle.control("POST", "reset")
    handle.control("PUT", "clock", {"scale": 0.001})
    for name, value in {"AWS_ENDPOINT_URL": sandbox_world.aws_url, "HF_ENDPOINT": f"{sandbox_world.aws_url}/_hub",
                        "AWS_ACCESS_KEY_ID": "sandbox",
                        "AWS_SECRET_ACCESS_KEY": "sandbox", "AWS_DEFAULT_REGION": "us-west-2"}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    delay = ExponentialBackoff.delay_amount
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: delay(self, context) / 100)
    kube.forget_api_clients()
    yield handle
    if handle.control("GET", "faults")["faults"]:
        aws.forget_clients()
    handle.control("POST", "reset")
    kube.forget_api_clients()


@pytest.fixture
def sandbox(sandbox_world, monkeypatch) -> Iterator[SandboxHandle]:
    """An empty sandbox world for this test (:func:`sandbox_in_use`). A module whose tests share one world (e.g. one
    cluster built once) uses a module-scoped fixture over :func:`sandbox_in_use` instead, and no test of it may ask
    for this one (it would empty the shared world)."""
    yield from sandbox_in_use(sandbox_world, monkeypatch)
