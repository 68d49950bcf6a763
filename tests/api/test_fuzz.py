"""Schema-driven fuzzing of the whole REST API (schemathesis against /api/schema/).

Every generated request, valid or not, must get a non-5xx answer that conforms to the documented
schema, status codes and content type, and a request that violates the schema must be refused with a 4xx
(``negative_data_rejection``). Schemathesis draws from its example, coverage (boundary and negative values per
parameter) and fuzzing phases, in positive and negative modes; hooks swap drawn strings for digits of other scripts
(``²``, ``٣``, ``１２``), ids past 64 bits, fractions and control characters, and body values for nesting deeper than
a JSON body may have. Runs as an authenticated team admin, so the generated requests reach the services rather than
stopping at authentication — and, for the endpoints that read or change the cloud, the sandbox. Every object it can
change or delete is the test's own: a fresh database (the cast's teams) and a reset sandbox per test; the other
team's objects answer 404. ``test_the_inputs_the_outside_probe_found_are_refused`` sends each input an outside probe
found (issue 15) explicitly and names the refusal it must get.

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
from hypothesis import strategies as st
from rest_framework.throttling import SimpleRateThrottle
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from config.wsgi import application
from tests import factories

pytestmark = pytest.mark.fuzz

schema = schemathesis.pytest.from_fixture("api_schema")

#: Strings the generated values are swapped for now and then: digits of other scripts (``int()`` reads them, a
#: database does not), ids past 64 bits, fractions and exponents where ids go, a control character.
HOSTILE_STRINGS = ["²", "٣", "１２", "-1.5", "1e400", "12345678901234567890", "\u0000"]


def _nested(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _sometimes_hostile(values: dict, replacements: list) -> st.SearchStrategy:
    """``values`` as drawn, or with one of its entries replaced by one of ``replacements``."""
    if not isinstance(values, dict) or not values:
        return st.just(values)
    swapped = st.tuples(st.sampled_from(sorted(values)), st.sampled_from(replacements))
    return st.one_of(st.just(values), swapped.map(lambda change: {**values, change[0]: change[1]}))


@schemathesis.hook
def flatmap_path_parameters(context, path_parameters):
    return _sometimes_hostile(path_parameters, HOSTILE_STRINGS)


@schemathesis.hook
def flatmap_query(context, query):
    return _sometimes_hostile(query, HOSTILE_STRINGS)


@schemathesis.hook
def flatmap_body(context, body):
    """Bodies also meet nesting past the 64 levels a JSON body may have."""
    return _sometimes_hostile(body, [*HOSTILE_STRINGS, _nested(100)])


EXPLORE = os.environ.get("INSTANTSTART_FUZZ_EXPLORE", "").strip().lower() in {"1", "true", "yes", "on"}
FIXED_EXAMPLES = 10
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
        checks=[not_a_server_error, negative_data_rejection, status_code_conformance, content_type_conformance,
                response_schema_conformance],
    )


SHARED_BUCKET = "instantstart-shared-123456789012-us-west-2"


#: A body nested past the 64 levels a JSON body may have.
DEEP = {"name": "deep", "slug": "deep", "description": _nested(100)}
#: The inputs the outside probe answered with a 5xx or accepted although they are invalid (issue 15), each as the
#: operation, its input (``{cluster}``: the test's own cluster), and the refusal expected:
#: the top-level code, or ``field: code``.
PROBE_INPUTS = [
    ("GET /training-jobs", {"query": {"team": "²"}}, "team: invalid"),
    ("GET /training-jobs", {"query": {"team": "٣"}}, "team: invalid"),
    ("GET /training-jobs", {"query": {"team": "-1.5"}}, "team: invalid"),
    ("GET /clusters", {"query": {"team": "12345678901234567890"}}, "team: max_value"),
    ("GET /clusters/{cluster_id}", {"path_parameters": {"cluster_id": "12345678901234567890"}}, "not_found"),
    ("GET /inspect/zones", {"query": {"region": "xx-nowhere-9"}}, "region: unknown_region"),
    ("GET /inspect/quotas", {"query": {"region": "xx-nowhere-9", "instance_type": "ml.g5.8xlarge"}},
     "region: unknown_region"),
    ("GET /audit-events", {"query": {"page_size": 10**9}}, "page_size: max_value"),
    ("GET /operations", {"query": {"active": "-58800"}}, "active: invalid"),
    ("POST /clusters/{cluster_id}/volumes", {"body": {"name": "big", "kind": "fsx", "capacity_gib": 2_400_000_000_000}},
     "capacity_gib: max_value"),
    ("POST /clusters/{cluster_id}/volumes",
     {"body": {"name": "theirs", "kind": "s3", "bucket": SHARED_BUCKET, "prefix": "teams/speech/"}},
     "prefix: path_outside_shared_bucket"),
    ("POST /training-jobs", {"body": {"cluster": "{cluster}", "recipe": "pytorch", "name": "job",
                                      "config": {"script": "train.py", "replicas": "2"}}}, "replicas: invalid_type"),
    ("POST /teams", {"body": DEEP}, "json_too_deep"),
]


def _filled(value, cluster_id: int):
    if value == "{cluster}":
        return cluster_id
    if isinstance(value, dict):
        return {key: _filled(item, cluster_id) for key, item in value.items()}
    return value


def test_the_inputs_the_outside_probe_found_are_refused(api_schema, fuzz_token, sandbox, cast, monkeypatch):
    """One test for all of :data:`PROBE_INPUTS` (the schema is loaded once), each sent through schemathesis's checks
    and named in the failure."""
    monkeypatch.setenv("INSTANTSTART_SHARED_BUCKET", SHARED_BUCKET)
    cluster = factories.cluster(cast.team, created_by=cast.admin)
    wrong = []
    for label, inputs, refusal in PROBE_INPUTS:
        method, path = label.split(" ", 1)
        operation = api_schema.find_operation_by_label(f"{method} /api/v1{path}")
        assert operation is not None, label
        case = operation.Case(**{"path_parameters": {"cluster_id": cluster.pk}, **_filled(inputs, cluster.pk)})
        response = case.call_and_validate(
            headers={"Authorization": f"Bearer {fuzz_token}"},
            checks=[not_a_server_error, status_code_conformance, content_type_conformance,
                    response_schema_conformance])
        body = response.json()
        field, _, code = refusal.rpartition(": ")
        codes = [item["code"] for item in body.get("fields", {}).get(field, [])] if field else [body.get("code")]
        if not 400 <= response.status_code < 500 or code not in codes:
            wrong.append(f"{label} {inputs}: expected {refusal}, got {response.status_code} {body}")
    assert not wrong, "\n".join(wrong)
