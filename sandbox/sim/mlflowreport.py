"""Simulated MLflow reporting of training jobs, as a recipe using the ``sagemaker-mlflow`` plugin reports.

A job reports when the environment of its reporting process — a HyperPodPyTorchJob's rank 0 container, a RayJob's
driver (head container env, overridden by ``runtimeEnvYAML``'s ``env_vars``) — has ``MLFLOW_TRACKING_URI`` set to
the ARN of a sandbox tracking server that is active. ``start`` then creates (or reuses) experiment
``MLFLOW_EXPERIMENT_NAME`` (default ``Default``) and starts a run named ``MLFLOW_RUN_NAME`` (default: the job's
name; tag ``mlflow.runName``); ``log`` records ``loss`` and ``throughput`` at a step with the values the log line
shows; ``end`` ends the run ``FINISHED`` or ``FAILED``. When the server is unknown or not active, ``start``
answers a warning line for the job's log and nothing is reported; later failures (the server stopped meanwhile)
are ignored, like a script whose MLflow calls fail without killing training.

The report's state is a plain dict kept in the job controller's memory (``{"arn", "run_id"}``).
"""

from __future__ import annotations

import contextlib
from typing import Any

import yaml

from sandbox.aws import mlflow_tracking
from sandbox.aws.mlflow_tracking import MlflowError

TRACKING_URI = "MLFLOW_TRACKING_URI"
EXPERIMENT_NAME = "MLFLOW_EXPERIMENT_NAME"
RUN_NAME = "MLFLOW_RUN_NAME"


def template_env(template: dict[str, Any]) -> dict[str, str]:
    """The literal env of the pod template's first container that sets ``MLFLOW_TRACKING_URI`` (else the first)."""
    containers = (template.get("spec") or {}).get("containers") or []
    envs = [{e["name"]: str(e["value"]) for e in c.get("env") or [] if "name" in e and "value" in e}
            for c in containers]
    return next((env for env in envs if TRACKING_URI in env), envs[0] if envs else {})


def runtime_env(runtime_env_yaml: str | None) -> dict[str, str]:
    """``env_vars`` of a RayJob's ``runtimeEnvYAML`` (``{}`` when absent or unreadable)."""
    try:
        parsed = yaml.safe_load(runtime_env_yaml or "") or {}
    except yaml.YAMLError:
        return {}
    env_vars = parsed.get("env_vars") if isinstance(parsed, dict) else None
    return {str(k): str(v) for k, v in env_vars.items()} if isinstance(env_vars, dict) else {}


def start(env: dict[str, str], job_name: str, at: float) -> tuple[dict[str, str] | None, str | None]:
    """``(report state, None)`` once the run is open, ``(None, warning line)`` when the tracking server cannot
    be used, ``(None, None)`` when the job does not use MLflow."""
    uri = env.get(TRACKING_URI, "")
    if not uri:
        return None, None
    arn = uri.split("#", 1)[0]
    try:
        run_id = mlflow_tracking.open_run(arn, env.get(EXPERIMENT_NAME) or "Default", env.get(RUN_NAME) or job_name,
                                          at)
    except MlflowError as error:
        return None, f"mlflow: WARNING: cannot reach tracking server {uri}: {error.error_code}: {error.message}"
    return {"arn": arn, "run_id": run_id}, None


def log(report: dict[str, str] | None, points: list[tuple[int, float, float, float]]) -> None:
    """Log ``(step, loss, throughput, timestamp)`` points to the run."""
    if report is None or not points:
        return
    metrics = [(key, value, at, step) for step, loss, throughput, at in points
               for key, value in (("loss", loss), ("throughput", throughput))]
    with contextlib.suppress(MlflowError):
        mlflow_tracking.log_metrics(report["arn"], report["run_id"], metrics)


def end(report: dict[str, str] | None, succeeded: bool, at: float) -> None:
    """End the run ``FINISHED`` or ``FAILED``."""
    if report is None:
        return
    with contextlib.suppress(MlflowError):
        mlflow_tracking.end_run(report["arn"], report["run_id"], "FINISHED" if succeeded else "FAILED", at)
