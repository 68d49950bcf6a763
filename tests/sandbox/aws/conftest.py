"""The AWS sandbox, started once per session on a free port and reset before every test.

Clients are plain boto3 clients pointed at it with dummy credentials; time runs at 1/1000 of AWS's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.retries.standard import ExponentialBackoff

from sandbox import clock, control
from sandbox.aws import server
from tests.sandbox.aws.helpers import REGION


@pytest.fixture(scope="session")
def aws_sandbox() -> Iterator[server.AwsSandbox]:
    sandbox = server.start("127.0.0.1", 0)
    yield sandbox
    sandbox.stop()


@pytest.fixture(autouse=True)
def _fresh_world(aws_sandbox: server.AwsSandbox, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A reset world at 1/1000 time, and botocore's retry backoff shrunk a hundredfold (its logic unchanged)."""
    previous = clock.scale()
    control.reset()
    clock.set_scale(0.001)
    delay = ExponentialBackoff.delay_amount
    monkeypatch.setattr(ExponentialBackoff, "delay_amount", lambda self, context: delay(self, context) / 100)
    yield
    clock.set_scale(previous)


@pytest.fixture(scope="session")
def boto_session() -> boto3.session.Session:
    """One session for every client, so botocore loads each service model once."""
    return boto3.session.Session()


@pytest.fixture
def client(aws_sandbox: server.AwsSandbox, boto_session: boto3.session.Session) -> Callable[..., Any]:
    """``client(service, region=REGION, retries=None, validate=True)``: a boto3 client of the sandbox.

    Without ``retries`` the client makes a single attempt, so every error reaches the test.
    """

    def make(service: str, region: str = REGION, retries: dict[str, Any] | None = None,
             validate: bool = True) -> Any:
        config = Config(retries=retries or {"mode": "standard", "total_max_attempts": 1},
                        parameter_validation=validate)
        return boto_session.client(service, region_name=region, endpoint_url=aws_sandbox.url,
                                   aws_access_key_id="testing", aws_secret_access_key="testing", config=config)

    return make
