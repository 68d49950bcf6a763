"""``{% job_metric_charts job as metrics %}``: the job's chart data for ``training/jobs/_metrics_chart.html`` —
``{"source": "mlflow" | "logs" | None, "charts": [(Chart, runs), …]}`` (see ``training.mlflow.chart``), where
``runs`` is the JSON ``static/js/training-metrics.js`` draws: this job's points of the metric, then those of the
runs it was resubmitted from, newest first (``[{"label", "points": [[step, value], …]}, …]``)."""

import json

from django import template

from training.mlflow.chart import charts
from training.mlflow.metrics import job_series
from training.models import TrainingJob

register = template.Library()

#: How many earlier runs (the jobs a job was resubmitted from) its charts compare it with.
COMPARED_RUNS = 3


def earlier_runs(job: TrainingJob) -> list[TrainingJob]:
    """The jobs ``job`` was resubmitted from, newest first, at most :data:`COMPARED_RUNS` (one query each)."""
    earlier: list[TrainingJob] = []
    current = job
    while current.resubmitted_from_id is not None and len(earlier) < COMPARED_RUNS:
        found = TrainingJob.objects.filter(pk=current.resubmitted_from_id).first()
        if found is None:
            break
        earlier.append(found)
        current = found
    return earlier


@register.simple_tag
def job_metric_charts(job) -> dict:
    found = job_series(job)
    compared = [(run, job_series(run)["series"]) for run in earlier_runs(job)]
    drawn = []
    for chart in charts(found["series"]):
        runs = [{"label": f"{job.name} (this run)", "points": found["series"].get(chart.name, [])}]
        runs += [{"label": run.name, "points": series.get(chart.name, [])} for run, series in compared
                 if series.get(chart.name)]
        drawn.append((chart, json.dumps(runs)))
    return {"source": found["source"], "charts": drawn}
