"""Training jobs in the portal: the jobs list, a job's page, and its Cancel and Resubmit buttons.

Reads go through ``training.selectors`` (another team's job is the 404 page); Cancel and Resubmit call
``services.training_job_cancel`` / ``training_job_resubmit`` with ``source="portal"``, their errors flashed with
their codes. The list's rows and the job page's status block are also served alone (``?partial=1``) so htmx can
re-read them every few seconds while jobs are active; the job's log streams over its WebSocket
(``static/js/training-logs.js``).
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import access
from accounts.requests import PortalRequest
from clusters import selectors as cluster_selectors
from config.context import Source
from config.converters import database_id
from governance import selectors as governance
from portal.views import act, portal_view
from training import actions, selectors, services, state_rules
from training.api.job_serializers import JOB_ACTIONS
from training.models import ACTIVE_JOB_STATES, JobState, TrainingJob

#: Most jobs the list shows (the REST list pages through them all).
LIST_LIMIT = 200
#: Log lines the page keeps in the DOM before dropping the oldest (the download link has them all).
LOG_WINDOW = 5000


def _filters(request: PortalRequest) -> dict:
    state = request.GET.get("state", "")
    return {"cluster": request.GET.get("cluster", ""), "state": state if state in JobState.values else ""}


@portal_view
def job_list(request: PortalRequest) -> HttpResponse:
    """The current team's jobs (every team of the user when none is current), newest first, filtered by
    ``?cluster=<id>`` and ``?state=<state>``; ``?partial=1`` renders the rows alone (the htmx refresh)."""
    filters = _filters(request)
    jobs = selectors.job_list(actor=request.user, team=request.team, state=filters["state"] or None)
    cluster_id = database_id(filters["cluster"])
    if cluster_id is not None:
        jobs = jobs.filter(cluster_id=cluster_id)
    listed = list(jobs[:LIST_LIMIT])
    context = {"section": "training", "jobs": listed, "filters": filters, "states": JobState.choices,
               "live": any(job.state in ACTIVE_JOB_STATES for job in listed)}
    if request.GET.get("partial"):
        return render(request, "training/jobs/_rows.html", context)
    clusters = list(cluster_selectors.cluster_list(actor=request.user, team=request.team).order_by("name"))
    context.update(clusters=clusters,
                   can_submit=any(access.can(request.user, actions.SUBMIT, cluster) for cluster in clusters)
                   or bool(governance.shared_cluster_choices(request.user, request.team, actions.SUBMIT)))
    return render(request, "training/jobs/list.html", context)


def _job_context(request: PortalRequest, job: TrainingJob) -> dict:
    caps = access.capabilities(request.user, job, JOB_ACTIONS, state_rules.job_allows)
    return {"section": "training", "job": job, "active": job.state in ACTIVE_JOB_STATES,
            "can_cancel": caps[actions.CANCEL], "can_resubmit": caps[actions.SUBMIT], "can_logs": caps[actions.LOGS],
            "admission": selectors.job_admission(job)}


@portal_view
def job_detail(request: PortalRequest, job_id: int) -> HttpResponse:
    """A job: header, recovery budget and recoveries, hangs, stragglers, ranks, metrics, the live log; ``?partial=1``
    renders the status block alone (the htmx refresh while the job is active)."""
    job = selectors.job_get(actor=request.user, job_id=job_id)
    context = _job_context(request, job)
    if request.GET.get("partial"):
        return render(request, "training/jobs/_status.html", context)
    ranks = sorted({rank["rank"] for rank in job.ranks if isinstance(rank.get("rank"), int)})
    context.update(log_window=LOG_WINDOW, ranks=ranks)
    return render(request, "training/jobs/detail.html", context)


@require_POST
@portal_view
def job_cancel(request: PortalRequest, job_id: int) -> HttpResponse:
    job = selectors.job_get(actor=request.user, job_id=job_id)
    return act(request, lambda: services.training_job_cancel(actor=request.user, job=job, source=Source.PORTAL),
               to=reverse("training-job", args=[job.pk]), success=f"Stopping {job.name}.")


@require_POST
@portal_view
def job_resubmit(request: PortalRequest, job_id: int) -> HttpResponse:
    """Submit the job's configuration again as ``<name>-r<N>`` and open the new job."""
    job = selectors.job_get(actor=request.user, job_id=job_id)
    return act(request, lambda: services.training_job_resubmit(actor=request.user, job=job, source=Source.PORTAL),
               to=lambda submitted: reverse("training-job", args=[submitted[0].pk]),
               success=lambda submitted: f"Resubmitted {job.name} as {submitted[0].name}.",
               back=reverse("training-job", args=[job.pk]))
