"""Inference reads (endpoints, model pools, model downloads), always narrowed by ``access.visible`` to the teams the
actor belongs to; the ``…_on`` helpers answer ``clusters.usage`` for one cluster."""

from __future__ import annotations

from django.db.models import QuerySet

from accounts import access
from accounts.models import Team, User
from accounts.selectors import get_visible, joined
from clusters.models import Cluster
from inference.models import (
    LIVE_ENDPOINT_STATES,
    DownloadState,
    Endpoint,
    EndpointState,
    ModelDownload,
    ModelPool,
)


def endpoint_list(*, actor: User, team: Team | None = None, cluster: Cluster | None = None,
                  exposure: str | None = None, include_deleted: bool = False) -> QuerySet[Endpoint]:
    """Endpoints of the actor's teams, newest first (deleted ones only with ``include_deleted``)."""
    endpoints = access.visible(actor, Endpoint).select_related("team", "cluster", "created_by", "operation", "pool")
    if not include_deleted:
        endpoints = endpoints.exclude(state=EndpointState.DELETED)
    if team is not None:
        endpoints = endpoints.filter(team=team)
    if cluster is not None:
        endpoints = endpoints.filter(cluster=cluster)
    if exposure:
        endpoints = endpoints.filter(exposure=exposure)
    return endpoints


def endpoint_list_rows(*, actor: User) -> QuerySet[Endpoint]:
    """The endpoints of :func:`endpoint_list` as a list shows them: of the related rows only the cluster's and the
    pool's names are read, and not what only one endpoint's page or its operations use (the manifest, the last
    observation, the Hugging Face token, the managed endpoint's settings)."""
    endpoints = access.visible(actor, Endpoint).exclude(state=EndpointState.DELETED)
    return joined(endpoints, cluster=("name",), pool=("name",)).defer(
        "manifest", "observed", "hf_token", "kv_cache", "routing", "operator_autoscaling")


def endpoint_get(*, actor: User, endpoint_id: int | str) -> Endpoint:
    """One endpoint (a deleted one too); ``NotFound`` when it does not exist or is another team's."""
    return get_visible(endpoint_list(actor=actor, include_deleted=True), endpoint_id, "inference endpoint")


def pool_list(*, actor: User, team: Team | None = None) -> QuerySet[ModelPool]:
    pools = access.visible(actor, ModelPool).select_related("team", "cluster", "operation").exclude(
        state=EndpointState.DELETED).prefetch_related("pool_workers__endpoint")
    return pools.filter(team=team) if team is not None else pools


def pool_get(*, actor: User, pool_id: int | str) -> ModelPool:
    return get_visible(access.visible(actor, ModelPool).select_related("team", "cluster", "operation"), pool_id,
                       "model pool")


def download_list(*, actor: User, team: Team | None = None, state: str | None = None) -> QuerySet[ModelDownload]:
    downloads = access.visible(actor, ModelDownload).select_related("team", "cluster", "created_by", "operation")
    if team is not None:
        downloads = downloads.filter(team=team)
    if state:
        downloads = downloads.filter(state=state)
    return downloads


def download_get(*, actor: User, download_id: int | str) -> ModelDownload:
    return get_visible(download_list(actor=actor), download_id, "model download")


def live_endpoints_on(cluster: Cluster) -> QuerySet[Endpoint]:
    """Endpoints whose objects exist (or are being made or removed) on ``cluster``."""
    return Endpoint.objects.filter(cluster=cluster, state__in=LIVE_ENDPOINT_STATES)


def live_pools_on(cluster: Cluster) -> QuerySet[ModelPool]:
    return ModelPool.objects.filter(cluster=cluster, state__in=LIVE_ENDPOINT_STATES)


def active_downloads_on(cluster: Cluster) -> QuerySet[ModelDownload]:
    return ModelDownload.objects.filter(cluster=cluster, state__in=(DownloadState.PENDING, DownloadState.RUNNING))
