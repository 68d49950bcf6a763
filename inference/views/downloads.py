"""Models in the portal: the models in the team's bucket, the downloads with their progress, the download form,
and a download's Cancel button.

The form posts through the REST path: ``ModelDownloadStartSerializer`` checks the shape (allow/ignore patterns
are typed space- or line-separated), then ``services.model_download_start`` (``origin="portal"``) checks the
rest; an error keeps the input (never the token) and shows each field's error with its code. The downloads table
is also served alone (``?partial=1``) so htmx re-reads it while a download runs.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import access
from accounts.requests import PortalRequest
from clusters import selectors as cluster_selectors
from clusters.models import Cluster, ClusterState
from config.context import Source as Face
from config.errors import ApplicationError
from inference import actions, selectors, services
from inference.api.download_serializers import ModelDownloadStartSerializer
from inference.downloads import bucket
from inference.models import TERMINAL_DOWNLOAD_STATES, DownloadSource
from portal.forms import SerializerForm
from portal.views import act, portal_view

LIST_LIMIT = 100
PATTERN_FIELDS = ("allow_patterns", "ignore_patterns")


def _clusters(request: PortalRequest) -> list[Cluster]:
    return list(cluster_selectors.cluster_list(actor=request.user, team=request.team)
                .filter(state=ClusterState.ACTIVE).order_by("name"))


def _chosen(clusters: list[Cluster], wanted: str) -> Cluster | None:
    return next((cluster for cluster in clusters if str(cluster.pk) == wanted), clusters[0] if clusters else None)


def _context(request: PortalRequest, cluster: Cluster | None, clusters: list[Cluster],
             form: SerializerForm) -> dict[str, Any]:
    downloads = list(selectors.download_list(actor=request.user, team=request.team)[:LIST_LIMIT])
    listing, listing_error = None, None
    if cluster is not None:
        try:
            listing = bucket.models(cluster)
        except ApplicationError as error:
            listing_error = error.message
    return {"section": "inference", "cluster": cluster, "clusters": clusters, "downloads": downloads,
            "live": any(download.state not in TERMINAL_DOWNLOAD_STATES for download in downloads),
            "listing": listing, "listing_error": listing_error, "form": form, "sources": DownloadSource.choices,
            "can_download": cluster is not None and access.can(request.user, actions.DOWNLOAD_START, cluster)}


@portal_view
def model_list(request: PortalRequest) -> HttpResponse:
    """The models in the team's bucket of the chosen cluster's region (``?cluster=<id>``), the downloads, and the
    download form; ``?partial=1`` renders the downloads table alone."""
    clusters = _clusters(request)
    cluster = _chosen(clusters, request.GET.get("cluster", ""))
    context = _context(request, cluster, clusters, SerializerForm(ModelDownloadStartSerializer,
                                                                  initial={"revision": "main", "source": "hub"}))
    if request.GET.get("partial"):
        return render(request, "inference/downloads/_rows.html", context)
    return render(request, "inference/downloads/list.html", context)


@require_POST
@portal_view
def download_start(request: PortalRequest) -> HttpResponse:
    data = request.POST.copy()
    for name in PATTERN_FIELDS:
        data.setlist(name, data.get(name, "").split())
    form = SerializerForm(ModelDownloadStartSerializer, data)
    cluster = cluster_selectors.cluster_get(actor=request.user, cluster_id=request.POST.get("cluster") or 0)

    def start(**values: Any):
        source = services.Source(kind=values["source"], repo_id=values["repo_id"].strip(),
                                 revision=values["revision"], allow_patterns=tuple(values["allow_patterns"]),
                                 ignore_patterns=tuple(values["ignore_patterns"]), source_uri=values["source_uri"],
                                 hf_token=values["hf_token"])
        return services.model_download_start(actor=request.user, cluster=cluster, name=values["name"],
                                             source=source, destination=values["destination"], origin=Face.PORTAL)

    started = form.submit(start)
    if started is None:
        form.values.pop("hf_token", None)
        for name in PATTERN_FIELDS:
            form.values[name] = request.POST.get(name, "")
        clusters = _clusters(request)
        return render(request, "inference/downloads/list.html", _context(request, cluster, clusters, form),
                      status=form.status)
    messages.success(request, f"Downloading {started[0].name}: follow its progress below.")
    return redirect(f"{reverse('inference-models')}?cluster={cluster.pk}")


@require_POST
@portal_view
def download_cancel(request: PortalRequest, download_id: int) -> HttpResponse:
    download = selectors.download_get(actor=request.user, download_id=download_id)
    back = f"{reverse('inference-models')}?cluster={download.cluster_id}"
    return act(request, lambda: services.model_download_cancel(actor=request.user, download=download,
                                                               origin=Face.PORTAL),
               to=back, success=f"Cancelling the download of {download.name}.")

