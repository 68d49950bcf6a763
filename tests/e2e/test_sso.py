"""Single sign-on in a real browser (headless Chromium) against the live test server and a real OpenID Connect
provider on loopback (tests/support/oidc_provider.py): the button, the round trip through the provider, and the
team the person's IdP group maps to."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from accounts.models import GroupMapping, Membership, Role, Team, User
from tests.e2e.browser import BROWSER_MARKS
from tests.support.oidc_provider import Person, configure, running_provider

pytestmark = BROWSER_MARKS


def test_sign_in_with_the_provider_lands_in_the_mapped_team(live_server, transactional_db, page, settings):
    team = Team.objects.create(name="Vision Lab", slug="vision-lab")
    GroupMapping.objects.create(group="vision", team=team, role=Role.OPERATOR)
    with running_provider() as idp:
        configure(settings, idp, name="Loopback IdP")
        idp.sign_in_as(idp.add(Person("sub-maya", "maya", "maya@example.com", ["vision", "everyone"])))

        page.goto(live_server.url + "/")
        expect(page).to_have_url(re.compile(r"/login/\?next=/$"))
        page.get_by_role("link", name="Sign in with Loopback IdP").click()

        expect(page).to_have_url(live_server.url + "/")
        expect(page.locator("#team-switcher")).to_have_value(str(team.pk))
    membership = Membership.objects.get(user=User.objects.get(username="maya"))
    assert (membership.team, membership.role, membership.mapped) == (team, Role.OPERATOR, True)
