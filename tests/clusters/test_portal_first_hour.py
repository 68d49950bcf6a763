"""The cluster pages a newcomer meets first (issue 24, item 11): the wizard presets the region and its review says
when the count is over the quota, before Create refuses it; the delete page says what goes and what stays."""

from __future__ import annotations

import html
import re

from django.test import Client
from django.urls import reverse

from accounts import services as account_services
from clusters.models import ClusterState, StorageKind
from config.context import Source
from tests import factories

REGION = "us-west-2"


def login(user, team) -> Client:
    account_services.user_switch_team(actor=user, team=team, source=Source.SYSTEM)
    client = Client()
    client.force_login(user)
    return client


def test_the_review_flags_a_count_over_the_quota(cast, sandbox):
    client = login(cast.admin, cast.team)
    answers = {"name": "vision-1", "region": REGION, "zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
               "capacity_type": "on-demand"}
    over = html.unescape(client.get(reverse("cluster-wizard-step", args=["review"]),
                                    {**answers, "instance_count": "9"}).content.decode())
    flagged = re.search(r'data-testid="review-quota" data-error-code="quota_exceeded">(.*?)</div>', over, re.S)
    assert flagged and "is 8, requested 9" in flagged.group(1)
    fits = client.get(reverse("cluster-wizard-step", args=["review"]), {**answers, "instance_count": "2"})
    assert 'data-testid="review-quota"' not in fits.content.decode()
    capacity = client.get(reverse("cluster-wizard-step", args=["capacity"]), answers).content.decode()
    assert "show:#step-review:top" in capacity, "Review scrolls to the review"


def test_the_delete_page_lists_what_goes_and_what_stays(cast):
    cluster = factories.cluster(cast.team, "alpha", hyperpod_name="alpha", state=ClusterState.ACTIVE)
    factories.instance_group(cluster, "workers", current_count=2)
    factories.storage_volume(cluster, "shared", shared=True, bucket="instantstart-shared-123-us-west-2")
    factories.storage_volume(cluster, "scratch", kind=StorageKind.FSX, managed=True)

    response = login(cast.admin, cast.team).get(reverse("cluster-delete", args=[cluster.pk]))
    page = html.unescape(response.content.decode())
    removes = re.search(r'data-testid="delete-removes">(.*?)</ul>', page, re.S).group(1)
    assert "workers</span> (ml.g5.8xlarge × 2)" in removes
    assert "scratch</span> (FSx for Lustre: the file system and its data)" in removes
    assert "shared</span> (S3 (Mountpoint CSI driver): its claim; the data stays)" in removes
    assert f"instantstart-{cluster.pk}-" in removes
    keeps = re.search(r'data-testid="delete-keeps">(.*?)</ul>', page, re.S).group(1)
    assert "s3://instantstart-shared-123-us-west-2" in keeps
