"""The training panel of the team's home (``portal.home``): the running jobs and the latest finished ones; a job that
failed in the last day needs attention."""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse
from django.utils import timezone

from accounts.models import Team, User
from portal.home import Attention, HomePanel
from training import selectors
from training.models import ACTIVE_JOB_STATES, JobState

#: Most jobs of each kind the panel lists.
HOME_JOBS = 5
#: How long a failed job stays on the attention list.
FAILED_RECENTLY = timedelta(days=1)


def jobs_panel(actor: User, team: Team) -> HomePanel:
    """Running jobs (all of them, up to :data:`HOME_JOBS`) and the latest finished; two queries."""
    jobs = selectors.job_list(actor=actor, team=team)
    running = list(jobs.filter(state__in=ACTIVE_JOB_STATES).order_by("-created_at")[:HOME_JOBS])
    recent = list(jobs.exclude(state__in=ACTIVE_JOB_STATES).order_by("-finished_at", "-created_at")[:HOME_JOBS])
    since = timezone.now() - FAILED_RECENTLY
    attention = [Attention(f"Training job {job.name} failed: {job.status_reason or 'see its page'}",
                           reverse("training-job", args=[job.pk]), "bad")
                 for job in recent if job.state == JobState.FAILED and (job.finished_at or job.created_at) >= since]
    return HomePanel(template="training/_home.html", order=20, attention=attention,
                     context={"home_running_jobs": running, "home_recent_jobs": recent})


HOME_PANELS = [jobs_panel]
