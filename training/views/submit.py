"""The submit page (``training/jobs/new/?recipe=<slug>&cluster=<id>``): pick a recipe and a cluster, fill the form
generated from the recipe's fields, submit. The clusters offered are the team's own and, labelled "shared by <team>",
other teams' on which the team has a compute quota (task governance: the job is the team's and runs in its namespace
and queue there, as REST's does).

The POST goes through the REST path: ``TrainingJobSubmitSerializer`` checks the shape, then
``services.training_job_submit(source="portal")`` checks everything else (``training.planning``). An error keeps the
user's input and puts each field's errors, with their codes, next to that field; ``operator_missing`` links the
cluster's features panel (or its dependencies). Success redirects to the new job's page.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse, QueryDict
from django.shortcuts import redirect, render
from rest_framework.exceptions import ValidationError

from accounts import access
from accounts.requests import PortalRequest
from clusters import selectors as cluster_selectors
from clusters.models import Cluster, ClusterState
from config.api.exceptions import error_body
from config.context import Source
from config.errors import ApplicationError
from governance import selectors as governance
from portal.forms import PAGE_ERRORS
from portal.views import portal_view
from training import actions, recipes, services, shared_files
from training.api.job_serializers import TrainingJobSubmitSerializer
from training.views.recipe_form import config_from_post, field_rows, split_errors


def _clusters(request: PortalRequest) -> tuple[list[Cluster], list[int]]:
    """Active clusters of the current team (of every team of the user when none is current) the user may submit
    to, then the clusters shared with it through a compute quota (``governance.shared_cluster_choices``); and the
    ids of those shared ones."""
    found = cluster_selectors.cluster_list(actor=request.user, team=request.team).filter(state=ClusterState.ACTIVE)
    own = [cluster for cluster in found.order_by("name") if access.can(request.user, actions.SUBMIT, cluster)]
    shared = [cluster for cluster in governance.shared_cluster_choices(request.user, request.team, actions.SUBMIT)
              if cluster not in own]
    return own + shared, [cluster.pk for cluster in shared]


def _chosen(request: PortalRequest, clusters: list[Cluster], wanted: str) -> Cluster | None:
    by_id = {str(cluster.pk): cluster for cluster in clusters}
    if wanted in by_id:
        return by_id[wanted]
    active = cluster_selectors.active_cluster(actor=request.user, team=request.team)
    if active is not None and str(active.pk) in by_id:
        return by_id[str(active.pk)]
    return clusters[0] if clusters else None


def _context(request: PortalRequest, *, recipe: dict[str, Any], cluster: Cluster | None, clusters: list[Cluster],
             shared: list[int], values: dict[str, Any], error: dict[str, Any] | None) -> dict[str, Any]:
    catalog = recipes.catalog_payload(cluster.region if cluster else None)
    placed, top, others = split_errors(recipe["fields"], error)
    if cluster is None:
        groups = []
    elif cluster.pk in shared:
        groups = list(governance.shared_groups(cluster))
    else:
        groups = list(cluster_selectors.group_list(actor=request.user, cluster=cluster))
    return {"section": "training", "catalog": catalog, "recipe": recipe, "cluster": cluster, "clusters": clusters,
            "shared": shared,
            "groups": groups, "rows": field_rows(recipe["fields"], values, placed), "values": values,
            "error": error, "other_errors": others, "top_errors": top, "mount": recipes.SHARED_MOUNT,
            "operator_missing": error is not None and error.get("code") == "operator_missing",
            "priorities": governance.priority_classes(cluster) if cluster else []}


def _recipe(slug: str, region: str | None) -> dict[str, Any]:
    catalog = recipes.catalog_payload(region)
    return next((item for item in catalog if item["slug"] == slug), catalog[0])


def _submit(request: PortalRequest, cluster: Cluster, recipe: dict[str, Any], data: QueryDict):
    """Validate and submit: ``(job, None, 202)`` or ``(None, REST error body, status)``. Page errors (404/403)
    propagate to ``portal_view``."""
    body = {"cluster": cluster.pk, "recipe": data.get("recipe", ""), "name": data.get("name", "").strip(),
            "priority": data.get("priority", "").strip(), "config": config_from_post(recipe["fields"], data)}
    serializer = TrainingJobSubmitSerializer(data=body)
    try:
        serializer.is_valid(raise_exception=True)
        job, _ = services.training_job_submit(
            actor=request.user, cluster=cluster, recipe=serializer.validated_data["recipe"],
            name=serializer.validated_data["name"], config=serializer.validated_data["config"],
            priority=serializer.validated_data["priority"], source=Source.PORTAL)
    except PAGE_ERRORS:
        raise
    except (ValidationError, ApplicationError) as exc:
        error, status = error_body(exc)
        return None, error, status
    return job, None, 202


def _may_upload(response: HttpResponse, cluster: Cluster | None) -> HttpResponse:
    """The site's Content-Security-Policy with the cluster region's S3 added to ``connect-src``: the Browse panel's
    uploads go from the browser straight to S3 (``shared_files.upload_origins``)."""
    if cluster is not None:
        origins = " ".join(shared_files.upload_origins(cluster.region))
        response["Content-Security-Policy"] = settings.CONTENT_SECURITY_POLICY.replace(
            "connect-src 'self'", f"connect-src 'self' {origins}")
    return response


@portal_view
def job_submit(request: PortalRequest) -> HttpResponse:
    """GET: the recipe tabs, the cluster choice and the recipe's form with its defaults (image for the cluster's
    region). POST: submit; the form again with its errors (4xx, the REST status), or a redirect to the job."""
    clusters, shared = _clusters(request)
    if request.method != "POST":
        cluster = _chosen(request, clusters, request.GET.get("cluster", ""))
        recipe = _recipe(request.GET.get("recipe", ""), cluster.region if cluster else None)
        context = _context(request, recipe=recipe, cluster=cluster, clusters=clusters, shared=shared, values={},
                           error=None)
        return _may_upload(render(request, "training/jobs/submit.html", context), cluster)
    cluster = governance.workload_cluster_get(actor=request.user, cluster_id=request.POST.get("cluster") or 0)
    recipe = _recipe(request.POST.get("recipe", ""), cluster.region)
    job, error, status = _submit(request, cluster, recipe, request.POST)
    if job is None:
        values = {**request.POST.dict(), "_submitted": True}
        context = _context(request, recipe=recipe, cluster=cluster, clusters=clusters, shared=shared, values=values,
                           error=error)
        return _may_upload(render(request, "training/jobs/submit.html", context, status=status), cluster)
    messages.success(request, f"Submitted {job.name} ({job.recipe}) to {cluster.name}.")
    return redirect("training-job", job_id=job.pk)
