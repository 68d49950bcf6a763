"""Guessing is bounded: the portal sign-in locks a username out per address after a few wrong passwords
(django-axes), refused and missing API tokens are counted per address on REST and MCP, and the address is the
connection's own unless it comes from a configured proxy (a forged ``X-Forwarded-For`` changes nothing)."""

from __future__ import annotations

import pytest
from django.test import Client, RequestFactory
from django.urls import reverse
from rest_framework.request import Request

from accounts.addresses import client_address
from accounts.throttling import TokenRateThrottle
from tests.accounts.test_portal import error_code_on_page
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"


def sign_in(password: str, *, username: str = "ada", address: str = "203.0.113.7", forwarded: str | None = None):
    headers = {"REMOTE_ADDR": address} | ({"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {})
    client = Client()
    return client, client.post(reverse("login"), {"username": username, "password": password}, **headers)


def test_the_sign_in_locks_out_after_the_failure_limit_even_with_the_right_password(cast, settings):
    first = sign_in("guess")[1]
    assert first.status_code == 200
    assert error_code_on_page(first, "invalid_login")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in("guess")

    client, right = sign_in(PASSWORD)
    assert right.status_code == 429
    assert error_code_on_page(right, "login_locked_out")
    assert "_auth_user_id" not in client.session

    other_address = sign_in(PASSWORD, address="198.51.100.9")[1]
    other_user = sign_in(PASSWORD, username="otto")[1]
    assert other_address.status_code == other_user.status_code == 302


def test_a_forged_forwarded_for_does_not_dodge_the_lockout(cast, settings):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        sign_in("guess", forwarded=f"192.0.2.{attempt}")
    assert sign_in(PASSWORD, forwarded="192.0.2.200")[1].status_code == 429


def test_a_successful_sign_in_resets_the_count(cast, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        sign_in("guess")
    assert sign_in(PASSWORD)[1].status_code == 302
    assert sign_in("guess")[1].status_code == 200
    assert sign_in(PASSWORD)[1].status_code == 302


def meta_request(address: str, forwarded: str | None = None):
    headers = {"REMOTE_ADDR": address} | ({"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {})
    return RequestFactory().get("/", **headers)


def test_the_address_is_the_peer_unless_the_peer_is_a_trusted_proxy(settings):
    assert client_address(meta_request("203.0.113.7", "10.9.9.9")) == "203.0.113.7"
    settings.INSTANTSTART_TRUSTED_PROXIES = ["10.0.0.0/8", "::1/128"]
    # the proxy appended the real peer; whatever the client sent before it is not believed
    assert client_address(meta_request("10.0.0.2", "6.6.6.6, 198.51.100.4")) == "198.51.100.4"
    assert client_address(meta_request("10.0.0.2", "6.6.6.6, 198.51.100.4, 10.1.1.1")) == "198.51.100.4"
    assert client_address(meta_request("10.0.0.2", "not-an-address, 10.1.1.1")) == "10.1.1.1"
    assert client_address(meta_request("10.0.0.2")) == "10.0.0.2"
    assert client_address(meta_request("203.0.113.7", "198.51.100.4")) == "203.0.113.7"


def test_the_anonymous_rate_limit_counts_the_peer_not_the_forwarded_header():
    throttle = TokenRateThrottle()
    forged = [Request(meta_request("203.0.113.7", f"192.0.2.{n}")) for n in range(2)]
    assert throttle.get_ident(forged[0]) == throttle.get_ident(forged[1]) == "203.0.113.7"


def test_refused_and_missing_tokens_are_counted_per_address_then_refused_with_429(cast, token_for, settings):
    settings.INSTANTSTART_AUTH_FAILURE_LIMIT = 3
    good = token_for(cast.viewer)
    guesser = {"REMOTE_ADDR": "203.0.113.7"}
    assert ApiClient("isk_guess-1").request("GET", "/api/v1/me", None, **guesser).status_code == 401
    assert ApiClient("isk_guess-2").request("GET", "/api/v1/me", None, **guesser).status_code == 401
    assert ApiClient(None).request("GET", "/api/v1/me", None, **guesser).status_code == 401

    refused = ApiClient(good).request("GET", "/api/v1/me", None, **guesser)
    assert refused.status_code == 429
    assert refused.json()["code"] == "too_many_auth_failures"
    assert int(refused["Retry-After"]) >= settings.INSTANTSTART_AUTH_FAILURE_WINDOW_SECONDS
    assert ApiClient(None).request("GET", "/api/v1/me", None, **guesser).status_code == 429
    forged = ApiClient(good).request("GET", "/api/v1/me", None, HTTP_X_FORWARDED_FOR="192.0.2.1", **guesser)
    assert forged.status_code == 429

    assert ApiClient(good).request("GET", "/api/v1/me", None, REMOTE_ADDR="198.51.100.9").status_code == 200

