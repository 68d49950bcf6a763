"""Fixtures for the clusters app: a cluster row in any state, and the create operation for it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from clusters.models import Cluster, ClusterState
from clusters.spec import ClusterSpec
from tests import factories
from tests.operations.conftest import drive, fast_polling  # noqa: F401  (the engine driver, shared)


@pytest.fixture
def import_allowed(cast) -> None:
    """An import rule that lets the cast's team admins import any EKS cluster, for tests of the import itself (who
    may import what: tests/clusters/test_import_policy.py)."""
    from clusters.models import ImportRule

    ImportRule.objects.create(team=cast.team, name_pattern="*")


@pytest.fixture
def make_cluster(cast) -> Callable[..., Cluster]:
    """A cluster row of the cast's team (no cloud resources), created from a spec with sandbox-friendly defaults."""

    def make(name: str = "alpha", *, team=None, state: str = ClusterState.CREATING, origin: str = "created",
             **spec) -> Cluster:
        choices = ClusterSpec(**{"name": name, "region": "us-west-2", "zone": "us-west-2a",
                                 "instance_type": "ml.g5.8xlarge", "instance_count": 1, **spec})
        return factories.cluster(team or cast.team, name, region=choices.region, state=state, origin=origin,
                                 spec=choices.as_params(), created_by=cast.admin)

    return make


LIVE_CLUSTER = {"name": "alpha", "region": "us-west-2", "zone": "us-west-2a", "instance_type": "ml.g5.8xlarge",
                "instance_count": 2}


@pytest.fixture
def live_cluster(api, cast, sandbox, drive) -> Callable[..., Cluster]:  # noqa: F811
    """Create a cluster through ``POST /api/v1/clusters`` and the whole ``cluster.create`` pipeline against the
    sandbox (VPC, EKS, add-ons, HyperPod with its ``accelerated`` group, storage); returns it ``active``."""
    from operations.models import Operation, OperationState

    def create(**changes) -> Cluster:
        response = api(cast.admin).post("/api/v1/clusters", {**LIVE_CLUSTER, **changes})
        assert response.status_code == 202, response.content
        operation = drive(Operation.objects.get(pk=response.json()["operation"]["id"]), timeout=120)
        assert operation.state == OperationState.SUCCEEDED, (operation.phase, operation.error_message)
        return Cluster.objects.get(pk=operation.params["cluster_id"])

    return create
