"""Django admin: every model is registered, only platform superusers get in, changelists have no N+1."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from accounts import services
from accounts.models import Membership, Role
from config.context import Source
from operations import demo
from operations.models import IdempotencyRecord

PRODUCT_APPS = ("accounts", "operations")


def product_models():
    return [model for app in PRODUCT_APPS for model in apps.get_app_config(app).get_models()]


def changelist(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


def test_every_product_model_is_in_admin():
    assert [model for model in product_models() if model not in admin.site._registry] == []


def test_team_admins_are_not_platform_admins(cast):
    client = Client()
    client.force_login(cast.admin)
    assert client.get(reverse("admin:index")).status_code == 302


@pytest.mark.parametrize("model", product_models(), ids=lambda model: model.__name__)
def test_changelist_queries_do_not_grow_with_rows(model, cast, make_user, django_assert_max_num_queries):
    client = Client()
    client.force_login(cast.superuser)
    client.get(changelist(model))
    with CaptureQueriesContext(connection) as few:
        assert client.get(changelist(model)).status_code == 200
    for index in range(15):
        user = make_user(f"bulk{index}")
        Membership.objects.create(team=cast.team, user=user, role=Role.VIEWER)
        services.token_create(actor=user, name="bulk", source=Source.SYSTEM)
        services.invitation_create(actor=cast.admin, team=cast.team, invitee=f"invitee{index}", role=Role.VIEWER,
                                   source=Source.SYSTEM)
        services.team_update(actor=cast.admin, team=cast.team, description=f"v{index}", source=Source.SYSTEM)
        IdempotencyRecord.objects.create(user=user, key=f"k{index}", fingerprint="f", method="POST", path="/x")
        demo.demo_start(actor=cast.admin, team=cast.team, name=f"bulk{index}", region="us-west-2",
                        source=Source.SYSTEM)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get(changelist(model), {"q": ""}).status_code == 200
