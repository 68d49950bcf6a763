"""``/healthz`` and ``/readyz`` through the real request stack, against the real database, Redis and broker."""

from __future__ import annotations

import socket

import pytest

from config.celery import app as celery_app


@pytest.fixture
def closed_redis_url() -> str:
    """A Redis URL on a local port nothing listens on (connections are refused at once)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"redis://127.0.0.1:{port}/0"


@pytest.fixture
def broker_down(closed_redis_url, settings):
    """Point both the cache/Redis check and the Celery broker at ``closed_redis_url`` for one test."""
    settings.REDIS_URL = closed_redis_url
    previous = celery_app.conf.broker_url
    celery_app.conf.broker_url = closed_redis_url
    yield
    celery_app.conf.broker_url = previous


def test_healthz_answers_without_touching_dependencies(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_reports_every_dependency_ok(client):
    response = client.get("/readyz")

    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready"
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "database": True, "redis": True, "broker": True,
    }


@pytest.mark.django_db
def test_readyz_is_503_when_redis_and_the_broker_do_not_answer(client, broker_down):
    response = client.get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "not_ready"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["redis"]["ok"] is False
    assert body["checks"]["broker"]["ok"] is False
    assert "Connection" in body["checks"]["redis"]["error"]


def test_readyz_accepts_only_get(client):
    assert client.post("/readyz").status_code == 405


@pytest.mark.django_db
def test_probes_answer_any_host_and_only_read_methods(client):
    assert client.get("/readyz", HTTP_HOST="10.1.2.3:3099").status_code == 200
    assert client.get("/healthz", HTTP_HOST="10.1.2.3:3099").status_code == 200
    assert client.get("/api/v1/me", HTTP_HOST="10.1.2.3:3099").status_code == 400
    assert client.post("/healthz").status_code == 405


@pytest.mark.django_db
def test_readiness_failures_name_the_error_class_only(client, broker_down):
    checks = client.get("/readyz").json()["checks"]
    assert checks["redis"]["error"] == "ConnectionError"
    assert "127.0.0.1" not in str(checks)
