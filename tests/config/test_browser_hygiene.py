"""Browser hygiene (issue 15, item 8): the Content-Security-Policy and the templates that keep to it, the settings for
TLS, and the portal's ``next`` redirect staying on the page's own origin."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse

TEMPLATES = Path(settings.BASE_DIR) / "templates"
INLINE = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=", re.IGNORECASE)


def test_no_template_has_inline_script_style_or_event_handler():
    found = [f"{path.relative_to(TEMPLATES)}: {match.group(0).strip()}" for path in sorted(TEMPLATES.rglob("*.html"))
             for match in INLINE.finditer(path.read_text())]
    assert not found, "the Content-Security-Policy refuses these:\n" + "\n".join(found)


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/login/", "/admin/login/", "/api/docs/", "/api/v1/me"])
def test_every_answer_carries_the_strict_policy(url):
    response = Client().get(url)
    policy = response.headers["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "style-src 'self';" in policy and "frame-ancestors 'none'" in policy
    assert "unsafe" not in policy


@pytest.mark.django_db
def test_the_api_docs_load_their_start_up_script_from_the_site():
    page = Client().get("/api/docs/").content.decode()
    assert not INLINE.search(page), page
    script = re.search(r'<script src="(/api/docs/\?[^"]*script=[^"]*)"', page)
    assert script, page
    answer = Client().get(script.group(1).replace("&amp;", "&"))
    assert answer.status_code == 200 and answer["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in answer.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(("target", "kept"), [
    ("/clusters/", True),
    ("http://testserver/clusters/", True),
    ("http://localhost/clusters/", False),  # another of ALLOWED_HOSTS is another origin
    ("//evil.example/", False),
    ("https://evil.example/", False),
    ("/\\evil.example/", False),
])
def test_the_portals_next_stays_on_the_pages_own_origin(cast, target, kept):
    client = Client()
    client.force_login(cast.admin)
    response = client.post(reverse("switch-team"), {"current_team": cast.team.pk, "next": target})
    assert response.status_code == 302
    assert response["Location"] == (target if kept else reverse("dashboard"))


@pytest.mark.django_db
def test_the_login_next_stays_on_the_pages_own_origin(cast):
    cast.admin.set_password("correct horse battery")
    cast.admin.save()
    response = Client().post("/login/?next=http://localhost/clusters/",
                             {"username": cast.admin.username, "password": "correct horse battery",
                              "next": "http://localhost/clusters/"})
    assert response.status_code == 302 and response["Location"] == reverse("dashboard")


def settings_with(monkeypatch, **environ) -> dict:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(Path(settings.BASE_DIR) / "config" / "settings.py"))


def test_tls_settings_are_off_by_default_and_on_with_instantstart_https(monkeypatch):
    monkeypatch.delenv("INSTANTSTART_HTTPS", raising=False)
    monkeypatch.delenv("INSTANTSTART_HSTS_SECONDS", raising=False)
    plain = settings_with(monkeypatch)
    assert (plain["SESSION_COOKIE_SECURE"], plain["CSRF_COOKIE_SECURE"], plain["SECURE_SSL_REDIRECT"],
            plain["SECURE_HSTS_SECONDS"]) == (False, False, False, 0)
    tls = settings_with(monkeypatch, INSTANTSTART_HTTPS="1")
    assert (tls["SESSION_COOKIE_SECURE"], tls["CSRF_COOKIE_SECURE"], tls["SECURE_SSL_REDIRECT"]) == (True, True, True)
    assert tls["SECURE_HSTS_SECONDS"] == 365 * 24 * 3600 and tls["SECURE_HSTS_INCLUDE_SUBDOMAINS"] is False
    tuned = settings_with(monkeypatch, INSTANTSTART_HTTPS="1", INSTANTSTART_HSTS_SECONDS="600",
                          INSTANTSTART_HSTS_INCLUDE_SUBDOMAINS="1")
    assert (tuned["SECURE_HSTS_SECONDS"], tuned["SECURE_HSTS_INCLUDE_SUBDOMAINS"]) == (600, True)


@pytest.mark.django_db
def test_over_tls_the_answers_carry_hsts_and_secure_cookies(settings, cast):
    settings.SECURE_HSTS_SECONDS, settings.SESSION_COOKIE_SECURE, settings.CSRF_COOKIE_SECURE = 600, True, True
    response = Client().get("/login/", secure=True)
    assert response.headers["Strict-Transport-Security"] == "max-age=600"
    assert response.cookies[settings.CSRF_COOKIE_NAME]["secure"] is True


@pytest.mark.django_db
def test_the_favicon_is_served_where_browsers_ask_for_it():
    response = Client().get("/favicon.ico")
    assert response.status_code == 301 and response.url.endswith("favicon.svg")


def test_a_refusal_is_logged_in_one_line_without_a_traceback(cast, caplog):
    browser = Client()
    browser.force_login(cast.operator)
    with caplog.at_level("WARNING", logger="django.request"):
        assert browser.get(reverse("cluster-import")).status_code == 403
    refused = [record for record in caplog.records if getattr(record, "status_code", None) == 403]
    assert refused and all(record.exc_info is None for record in refused), refused
