"""Schema-driven fuzzing of the whole REST API (schemathesis against /api/schema/).

Every generated request, valid or not, must get a non-5xx answer that conforms to the documented
schema, status codes and content type. Runs as an authenticated team admin, so the generated
requests reach the services rather than stopping at authentication — and, for the endpoints that read or change
the cloud, the sandbox.

``make test`` and CI draw the same examples on every run (Hypothesis's ``derandomize``), so their verdict does not
depend on luck. Set ``INSTANTSTART_FUZZ_EXPLORE=1`` to explore instead: a fresh random draw of ``EXPLORE_EXAMPLES``
per operation, e.g. ``INSTANTSTART_FUZZ_EXPLORE=1 .venv/bin/python -m pytest -m fuzz`` (a failure prints the
``@seed`` that reproduces it; ``--hypothesis-seed=N`` replays a draw).
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from rest_framework.throttling import SimpleRateThrottle
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application

pytestmark = pytest.mark.fuzz

schema = schemathesis.pytest.from_fixture("api_schema")

EXPLORE = os.environ.get("INSTANTSTART_FUZZ_EXPLORE", "").strip().lower() in {"1", "true", "yes", "on"}
FIXED_EXAMPLES = 25
EXPLORE_EXAMPLES = 200


@pytest.fixture
def api_schema(django_db_reset_sequences):
    """The schema, loaded from the app. Requests go straight to the WSGI app, so, as Django's test client
    does, the request signals must not close the test's database connection mid-transaction.

    Ids start from 1 whatever ran before in this process: schemathesis feeds ids from answers into later requests,
    so the same draw meets the same rows and a run's verdict does not depend on which tests came first."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_token(cast, token_for, monkeypatch) -> str:
    """The admin's token, not rate-limited: the fuzz sends more than a token's 1,200 requests a minute, and which of
    them a limit would answer 429 depends on the machine's speed, not on the draw (throttling has its own tests)."""
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {**SimpleRateThrottle.THROTTLE_RATES, "token": None})
    return token_for(cast.admin)


@schema.parametrize()
@settings(max_examples=EXPLORE_EXAMPLES if EXPLORE else FIXED_EXAMPLES, derandomize=not EXPLORE, deadline=None,
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case, fuzz_token, sandbox):
    case.call_and_validate(
        headers={"Authorization": f"Bearer {fuzz_token}"},
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
    )
