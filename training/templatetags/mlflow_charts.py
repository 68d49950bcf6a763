"""``{% job_metric_charts job as metrics %}``: the job's chart data for ``training/jobs/_metrics_chart.html`` —
``{"source": "mlflow" | "logs" | None, "charts": [Chart, …]}`` (see ``training.mlflow.chart``)."""

from django import template

from training.mlflow.chart import charts
from training.mlflow.metrics import job_series

register = template.Library()


@register.simple_tag
def job_metric_charts(job) -> dict:
    found = job_series(job)
    return {"source": found["source"], "charts": charts(found["series"])}
