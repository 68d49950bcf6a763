"""The portal in a real browser (headless Chromium through Playwright) against the live test server:
sign in, create the first team, create an API token and see its secret exactly once."""

from __future__ import annotations

import hashlib
import re

from playwright.sync_api import expect

from accounts.models import ApiToken, Membership, Role, Team, User
from tests.e2e.browser import BROWSER_MARKS

pytestmark = BROWSER_MARKS


def test_sign_in_create_a_team_and_a_token(live_server, transactional_db, page):
    User.objects.create_superuser(username="maya", email="maya@example.com", password="correct-horse-battery")

    page.goto(live_server.url + "/")
    expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
    page.get_by_label("Username").fill("maya")
    page.get_by_label("Password").fill("correct-horse-battery")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Create your first team")).to_be_visible()

    page.get_by_test_id("create-first-team").click()
    page.get_by_label("Name").fill("Vision Lab")
    expect(page.get_by_label("Slug")).to_have_value("vision-lab")
    page.get_by_role("button", name="Create team").click()
    expect(page.get_by_text("Team Vision Lab created")).to_be_visible()
    team = Team.objects.get(slug="vision-lab")
    assert Membership.objects.get(team=team, user__username="maya").role == Role.ADMIN
    expect(page.locator("#team-switcher")).to_have_value(str(team.pk))

    page.get_by_label("User menu").click()
    page.get_by_role("link", name="API tokens").click()
    page.get_by_label("Name").fill("laptop agent")
    page.get_by_role("button", name="Create token").click()
    secret_box = page.get_by_test_id("token-secret")
    expect(secret_box).to_be_visible()
    secret = secret_box.input_value()
    assert secret.startswith("isk_")
    assert ApiToken.objects.get(name="laptop agent").key_hash == hashlib.sha256(secret.encode()).hexdigest()

    page.get_by_role("link", name="Done").click()
    expect(page.get_by_role("cell", name="laptop agent")).to_be_visible()
    assert secret not in page.content()
