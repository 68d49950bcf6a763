"""Accounts REST API: authentication, errors, idempotency, throttling, filters, query counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts import access, services
from accounts.models import ApiToken, AuditEvent, Membership, Role
from config.context import Source
from config.errors import TokenReadOnly
from operations.models import IdempotencyRecord


def codes(response) -> dict[str, list[str]]:
    return {field: [error["code"] for error in errors] for field, errors in response.json()["fields"].items()}


def test_me_with_a_token_shows_memberships_and_the_token(cast, api):
    body = api(cast.operator).get("/api/v1/me").json()
    assert body["username"] == "otto"
    assert body["memberships"] == [{"team": {"id": cast.team.pk, "name": "Vision", "slug": "vision"},
                                    "role": "operator"}]
    assert body["token"]["read_only"] is False


@pytest.mark.parametrize(("mutate", "code"), [
    (lambda token: setattr(token, "expires_at", timezone.now() - timedelta(seconds=1)), "token_expired"),
    (lambda token: setattr(token, "revoked_at", timezone.now()), "token_revoked"),
    (lambda token: setattr(token.user, "is_active", False) or token.user.save(), "user_inactive"),
])
def test_unusable_tokens_are_refused_with_their_code(make_user, token_for, mutate, code):
    from tests.conftest import ApiClient

    secret = token_for(make_user())
    token = ApiToken.objects.select_related("user").get()
    mutate(token)
    token.save()
    response = ApiClient(secret).get("/api/v1/me")
    assert response.status_code == 401
    assert response.json()["code"] == code
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.parametrize("header", ["Bearer isk_not-a-token", "Bearer nonsense", "Bearer a b"])
def test_invalid_tokens_are_refused(db, client, header):
    response = client.get("/api/v1/me", HTTP_AUTHORIZATION=header)
    assert (response.status_code, response.json()["code"]) == (401, "token_invalid")


def test_anonymous_is_not_authenticated(db, client):
    response = client.get("/api/v1/teams")
    assert response.status_code == 401
    assert response.json() == {"code": "not_authenticated", "message": "Authentication credentials were not provided.",
                               "fields": {}}


def test_last_used_is_recorded(cast, api):
    api(cast.viewer).get("/api/v1/me")
    assert ApiToken.objects.get(user=cast.viewer).last_used_at is not None


@pytest.mark.parametrize(("body", "field", "code"), [
    ({"name": "New", "slug": "Not A Slug"}, "slug", "invalid_slug"),
    ({"name": "New"}, "slug", "required"),
    ({"name": ["list"], "slug": "ok"}, "name", "invalid_type"),
    ({"name": "New", "slug": "new", "description": 0}, "description", "invalid_type"),
    ({"name": "New", "slug": "new", "owner": "me"}, "owner", "unknown_field"),
    ({"name": "x" * 101, "slug": "new"}, "name", "max_length"),
])
def test_bad_team_input_gets_field_errors_and_creates_nothing(cast, api, body, field, code):
    client = api(cast.admin)
    events = AuditEvent.objects.count()
    response = client.post("/api/v1/teams", body)
    assert response.status_code == 400
    assert response.json()["code"] == "validation_failed"
    assert code in codes(response)[field]
    assert AuditEvent.objects.count() == events


def test_malformed_and_non_object_bodies(cast, api):
    client = api(cast.admin)
    malformed = client.post("/api/v1/teams", "{not json")
    assert (malformed.status_code, malformed.json()["code"]) == (400, "malformed_request")
    listed = client.post("/api/v1/teams", [1, 2])
    assert (listed.status_code, listed.json()["code"]) == (400, "validation_failed")


def test_oversized_body_is_refused(cast, api, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = api(cast.admin).post("/api/v1/teams", {"name": "Big", "slug": "big", "description": "x" * 2000})
    assert (response.status_code, response.json()["code"]) == (413, "payload_too_large")


def test_wrong_media_type_and_method(cast, api):
    client = api(cast.admin)
    form = client.client.post("/api/v1/teams", {"name": "A", "slug": "a"}, **client.headers)
    assert (form.status_code, form.json()["code"]) == (415, "unsupported_media_type")
    put = client.request("PUT", "/api/v1/teams", {"name": "A"})
    assert (put.status_code, put.json()["code"]) == (405, "method_not_allowed")


def test_conflicts_have_stable_codes(cast, api):
    admin_membership = Membership.objects.get(team=cast.team, user=cast.admin)
    response = api(cast.admin).patch(f"/api/v1/teams/{cast.team.pk}/memberships/{admin_membership.pk}",
                                     {"role": "viewer"})
    assert (response.status_code, response.json()["code"]) == (409, "last_admin")


@pytest.mark.parametrize(("method", "path", "body"), [
    ("POST", "/api/v1/teams", {"name": "Nope", "slug": "nope"}),
    ("PATCH", "/api/v1/me", {"current_team": None}),
    ("DELETE", "/api/v1/tokens/{token_id}", None),
    ("PATCH", "/api/v1/teams/{team_id}", {"description": "changed"}),
])
def test_a_read_only_tokens_mutation_is_token_read_only(cast, api, method, path, body):
    client = api(cast.admin, read_only=True)
    token = ApiToken.objects.get(user=cast.admin, read_only=True)
    response = client.request(method, path.format(token_id=token.pk, team_id=cast.team.pk), body)
    assert response.status_code == TokenReadOnly.status == 403
    assert response.json() == {"code": "token_read_only", "message": "This API token is read-only.", "fields": {}}
    token.refresh_from_db()
    cast.team.refresh_from_db()
    assert (token.revoked_at, cast.team.description) == (None, "")
    assert not AuditEvent.objects.filter(source="api").exists()


def test_access_require_refuses_a_read_only_token_with_token_read_only(cast):
    cast.admin.api_token = ApiToken(user=cast.admin, read_only=True)
    with pytest.raises(TokenReadOnly) as refused:
        access.require(cast.admin, "team.update", cast.team)
    assert refused.value.as_dict() == {"code": "token_read_only", "message": "This API token is read-only.",
                                       "fields": {}}


def test_another_teams_ids_are_not_found(cast, api):
    other = cast.outsider.memberships.get().team
    response = api(cast.admin).get(f"/api/v1/teams/{other.pk}/memberships")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


@pytest.mark.usefixtures("open_team_creation")
class TestIdempotencyKey:
    def test_replay_returns_the_original_response(self, cast, api):
        client = api(cast.admin)
        first = client.post("/api/v1/teams", {"name": "Speechless", "slug": "speechless"}, HTTP_IDEMPOTENCY_KEY="k-1")
        again = client.post("/api/v1/teams", {"name": "Speechless", "slug": "speechless"}, HTTP_IDEMPOTENCY_KEY="k-1")
        assert first.status_code == again.status_code == 201
        assert again.json() == first.json()
        assert again["Idempotent-Replayed"] == "true"
        assert AuditEvent.objects.filter(action="team.create", target_repr="Speechless").count() == 1

    def test_same_key_different_body_is_a_conflict(self, cast, api):
        client = api(cast.admin)
        client.post("/api/v1/teams", {"name": "One", "slug": "one"}, HTTP_IDEMPOTENCY_KEY="k-2")
        response = client.post("/api/v1/teams", {"name": "Two", "slug": "two"}, HTTP_IDEMPOTENCY_KEY="k-2")
        assert (response.status_code, response.json()["code"]) == (409, "idempotency_key_reused")

    def test_a_failed_request_frees_its_key(self, cast, api):
        client = api(cast.admin)
        bad = client.post("/api/v1/teams", {"name": "Bad", "slug": "BAD"}, HTTP_IDEMPOTENCY_KEY="k-3")
        assert bad.status_code == 400
        assert not IdempotencyRecord.objects.exists()
        good = client.post("/api/v1/teams", {"name": "Good", "slug": "good"}, HTTP_IDEMPOTENCY_KEY="k-3")
        assert good.status_code == 201

    def test_keys_are_per_user(self, cast, api):
        body = {"name": "Shared", "slug": "shared"}
        assert api(cast.admin).post("/api/v1/teams", body, HTTP_IDEMPOTENCY_KEY="k-4").status_code == 201
        other = api(cast.viewer).post("/api/v1/teams", body, HTTP_IDEMPOTENCY_KEY="k-4")
        assert "Idempotent-Replayed" not in other
        assert other.status_code == 400

    def test_token_secret_is_not_stored_for_replay(self, cast, api):
        client = api(cast.admin)
        first = client.post("/api/v1/tokens", {"name": "ci", "expires_in_days": 7}, HTTP_IDEMPOTENCY_KEY="k-5").json()
        again = client.post("/api/v1/tokens", {"name": "ci", "expires_in_days": 7}, HTTP_IDEMPOTENCY_KEY="k-5").json()
        assert again["id"] == first["id"]
        assert again["token"] != first["token"]
        assert first["token"] not in str(IdempotencyRecord.objects.get().response_body)

    def test_a_claim_abandoned_by_a_dead_process_is_released_after_its_lease(self, cast, api):
        client = api(cast.admin)
        body = {"name": "Orphan", "slug": "orphan"}
        record = IdempotencyRecord.objects.create(user=cast.admin, key="k-7", fingerprint="x", method="POST",
                                                  path="/api/v1/teams")
        assert client.post("/api/v1/teams", body, HTTP_IDEMPOTENCY_KEY="k-7").json()["code"] == \
            "idempotency_key_reused"
        IdempotencyRecord.objects.filter(pk=record.pk).update(created_at=timezone.now() - timedelta(minutes=6))
        assert client.post("/api/v1/teams", body, HTTP_IDEMPOTENCY_KEY="k-7").status_code == 201

    def test_an_expired_key_can_be_used_again(self, cast, api):
        client = api(cast.admin)
        client.post("/api/v1/teams", {"name": "Old", "slug": "old"}, HTTP_IDEMPOTENCY_KEY="k-6")
        IdempotencyRecord.objects.update(created_at=timezone.now() - timedelta(days=2))
        response = client.post("/api/v1/teams", {"name": "Older", "slug": "older"}, HTTP_IDEMPOTENCY_KEY="k-6")
        assert response.status_code == 201


def test_throttling_is_per_token(cast, api, settings):
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "3/min"}}
    from rest_framework.settings import api_settings
    from rest_framework.throttling import SimpleRateThrottle

    SimpleRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    try:
        first, second = api(cast.admin), api(cast.admin)
        statuses = [first.get("/api/v1/me").status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        throttled = first.get("/api/v1/me")
        assert throttled.json()["code"] == "throttled"
        assert int(throttled["Retry-After"]) > 0
        assert second.get("/api/v1/me").status_code == 200
    finally:
        settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"token": "1200/min"}}
        SimpleRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES


def test_request_id_is_echoed_and_audited(cast, api):
    response = api(cast.admin).patch(f"/api/v1/teams/{cast.team.pk}", {"description": "hi"},
                                     HTTP_X_REQUEST_ID="trace-0123456789")
    assert response["X-Request-ID"] == "trace-0123456789"
    assert AuditEvent.objects.get(action="team.update").request_id == "trace-0123456789"


def test_switch_current_team(cast, api):
    client = api(cast.viewer)
    assert client.patch("/api/v1/me", {"current_team": cast.team.pk}).json()["current_team"] == cast.team.pk
    other = cast.outsider.memberships.get().team
    assert client.patch("/api/v1/me", {"current_team": other.pk}).status_code == 404


class TestAuditEvents:
    def test_only_visible_events_and_filters(self, cast, api):
        services.team_update(actor=cast.admin, team=cast.team, description="d", source=Source.PORTAL)
        client = api(cast.viewer)
        events = client.get("/api/v1/audit-events").json()["results"]
        assert {event["team"] for event in events} == {cast.team.pk, None}
        assert {event["actor_name"] for event in events if event["team"] is None} == {"vera"}
        portal = client.get("/api/v1/audit-events", source="portal").json()["results"]
        assert [event["action"] for event in portal] == ["team.update"]
        memberships = client.get("/api/v1/audit-events", action="membership.").json()["results"]
        assert memberships == []
        by_actor = client.get("/api/v1/audit-events", actor="ada", target_type="team").json()["results"]
        assert {event["action"] for event in by_actor} == {"team.create", "team.update"}

    def test_bad_filter_values_are_validation_errors(self, cast, api):
        response = api(cast.viewer).get("/api/v1/audit-events", source="carrier-pigeon", since="yesterday")
        assert response.status_code == 400
        assert set(codes(response)) == {"source", "since"}

    def test_cursor_pagination_walks_every_event_once(self, cast, api):
        for index in range(7):
            services.team_update(actor=cast.admin, team=cast.team, description=f"v{index}", source=Source.API)
        client = api(cast.admin)
        seen, url = [], f"/api/v1/audit-events?page_size=3&team={cast.team.pk}"
        while url:
            page = client.client.get(url, **client.headers).json()
            seen += [event["id"] for event in page["results"]]
            url = page["next"]
        assert len(seen) == len(set(seen)) == AuditEvent.objects.filter(team=cast.team).count()

    def test_list_query_count_does_not_grow_with_rows(self, cast, api, django_assert_max_num_queries):
        client = api(cast.admin)
        client.get("/api/v1/audit-events")
        for index in range(30):
            services.team_update(actor=cast.admin, team=cast.team, description=f"v{index}", source=Source.API)
        visible = AuditEvent.objects.filter(team=cast.team).count() + 1
        with django_assert_max_num_queries(6):
            assert len(client.get("/api/v1/audit-events").json()["results"]) == visible == 32


def test_team_and_membership_lists_have_constant_queries(cast, api, make_user, django_assert_max_num_queries):
    for index in range(20):
        Membership.objects.create(team=cast.team, user=make_user(f"m{index}"), role=Role.VIEWER)
    client = api(cast.admin)
    with django_assert_max_num_queries(6):
        assert len(client.get(f"/api/v1/teams/{cast.team.pk}/memberships").json()) == 23
    with django_assert_max_num_queries(6):
        assert len(client.get("/api/v1/teams").json()["results"]) == 1


@pytest.mark.parametrize("value", ["1088-02-23T15:37:12+18:15", "0001-01-01T00:00:00+01:00"])
def test_date_times_outside_utc_are_validation_errors(cast, api, value):
    response = api(cast.viewer).get("/api/v1/audit-events", since=value)
    assert response.status_code == 400
    assert codes(response) == {"since": ["invalid"]}


def test_date_time_filters_compare_in_utc(cast, api):
    client = api(cast.viewer)
    event = AuditEvent.objects.filter(team=cast.team).earliest("created_at")
    local = event.created_at.astimezone(timezone.get_fixed_timezone(-300)).isoformat()
    ids = [row["id"] for row in client.get("/api/v1/audit-events", since=local, team=cast.team.pk).json()["results"]]
    assert event.pk in ids


def test_a_token_cannot_issue_a_token_that_outlives_it(cast, api):
    client = api(cast.admin)
    longer = client.post("/api/v1/tokens", {"name": "forever", "expires_in_days": 365})
    assert longer.status_code == 400
    assert codes(longer) == {"expires_in_days": ["outlives_issuing_token"]}
    assert client.post("/api/v1/tokens", {"name": "short", "expires_in_days": 30}).status_code == 201


@pytest.mark.parametrize("value", ["1.5", "1e0", "abc", "99999999999999999999"])
def test_id_filters_take_whole_ids_only(cast, api, value):
    response = api(cast.viewer).get("/api/v1/audit-events", team=value)
    assert (response.status_code, codes(response)) == (400, {"team": [codes(response)["team"][0]]})


def test_the_slug_is_fixed_at_creation(cast, api):
    response = api(cast.admin).patch(f"/api/v1/teams/{cast.team.pk}", {"slug": "renamed"})
    assert codes(response) == {"slug": ["unknown_field"]}
