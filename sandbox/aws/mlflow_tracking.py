"""The data of SageMaker managed MLflow tracking servers: experiments, runs, params, tags and metric histories.

One ``Tracking`` per tracking server (keyed by ARN and creation time, so a server deleted and created again
starts empty), made on first use with MLflow's ``Default`` experiment (id ``"0"``). ``sandbox.control.reset()``
forgets them all. Everything runs under the extensions' lock (``core.transaction``).

``tracking(arn)`` answers ``MlflowError`` unless ``arn`` names a tracking server whose status is active
(``mlflow.ACTIVE``). Objects render as the MLflow REST API 2.0 shows them (``experiment_json``, ``run_json``,
``metric_json``): unset and empty fields are left out, as the server's protobuf JSON does.

The simulator reports for its jobs through ``open_run``, ``log_metrics`` and ``end_run`` (in-process).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from sandbox import clock, control
from sandbox.aws import core, mlflow

RUN_STATUSES = ("RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED")
RUN_NAME_TAG = "mlflow.runName"


class MlflowError(Exception):
    """An MLflow REST error: ``error_code`` (``RESOURCE_DOES_NOT_EXIST`` …), message, HTTP status."""

    def __init__(self, error_code: str, message: str, status: int = 400):
        super().__init__(message)
        self.error_code, self.message, self.status = error_code, message, status

    def body(self) -> dict[str, str]:
        return {"error_code": self.error_code, "message": self.message}


@dataclass
class Metric:
    key: str
    value: float
    timestamp: int
    step: int


@dataclass
class Experiment:
    experiment_id: str
    name: str
    artifact_location: str
    creation_time: int
    last_update_time: int
    tags: dict[str, str] = field(default_factory=dict)
    lifecycle_stage: str = "active"


@dataclass
class Run:
    run_id: str
    experiment_id: str
    run_name: str
    user_id: str
    start_time: int
    artifact_uri: str
    status: str = "RUNNING"
    end_time: int | None = None
    lifecycle_stage: str = "active"
    params: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, list[Metric]] = field(default_factory=dict)


@dataclass
class Tracking:
    """One tracking server's data."""

    artifact_root: str
    experiments: dict[str, Experiment] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)
    ids: itertools.count = field(default_factory=lambda: itertools.count(1))

    def experiment(self, experiment_id: str) -> Experiment:
        found = self.experiments.get(str(experiment_id))
        if found is None:
            raise MlflowError("RESOURCE_DOES_NOT_EXIST", f"No Experiment with id={experiment_id} exists", 404)
        return found

    def by_name(self, name: str) -> Experiment | None:
        return next((e for e in self.experiments.values() if e.name == name and e.lifecycle_stage == "active"), None)

    def run(self, run_id: str) -> Run:
        found = self.runs.get(str(run_id))
        if found is None:
            raise MlflowError("RESOURCE_DOES_NOT_EXIST", f"Run '{run_id}' not found", 404)
        return found

    def create_experiment(self, name: str, artifact_location: str | None = None,
                          tags: dict[str, str] | None = None) -> Experiment:
        if self.by_name(name) is not None:
            raise MlflowError("RESOURCE_ALREADY_EXISTS", f"Experiment '{name}' already exists.")
        experiment_id = str(next(self.ids)) if self.experiments else "0"
        now = now_ms()
        experiment = Experiment(experiment_id, name, artifact_location or f"{self.artifact_root}/{experiment_id}",
                                now, now, dict(tags or {}))
        self.experiments[experiment_id] = experiment
        return experiment

    def create_run(self, experiment_id: str, run_name: str | None, start_time: int | None = None,
                   tags: dict[str, str] | None = None, user_id: str = "") -> Run:
        experiment = self.experiment(experiment_id)
        run_id = core.hex_id(32)
        tags = dict(tags or {})
        run_name = run_name or tags.get(RUN_NAME_TAG) or f"run-{run_id[:8]}"
        tags[RUN_NAME_TAG] = run_name
        run = Run(run_id, experiment.experiment_id, run_name, user_id, now_ms() if start_time is None else start_time,
                  f"{experiment.artifact_location}/{run_id}/artifacts", tags=tags)
        self.runs[run_id] = run
        return run


_data: dict[tuple[str, float], Tracking] = {}


@control.on_reset
def _reset() -> None:
    with core.transaction():
        _data.clear()


def now_ms() -> int:
    return int(clock.now() * 1000)


def tracking(arn: str) -> Tracking:
    """The data of the active tracking server ``arn`` (call under ``core.transaction``)."""
    mlflow.refresh()
    server = mlflow.find_by_arn(arn)
    if server is None:
        raise MlflowError("RESOURCE_DOES_NOT_EXIST", f"Tracking server {arn} does not exist.", 404)
    if server.status not in mlflow.ACTIVE:
        raise MlflowError("TEMPORARILY_UNAVAILABLE", f"Tracking server {server.name} is {server.status}.", 503)
    key = (arn, server.created_at)
    if key not in _data:
        root = str(server.settings.get("ArtifactStoreUri") or f"s3://sagemaker-mlflow-{server.name}").rstrip("/")
        _data[key] = Tracking(artifact_root=root)
        _data[key].create_experiment("Default")
    return _data[key]


def log_metric(run: Run, metric: Metric) -> None:
    if run.lifecycle_stage != "active":
        raise MlflowError("INVALID_STATE", f"The run {run.run_id} must be in the 'active' state. Current state is "
                                           f"{run.lifecycle_stage}.")
    run.metrics.setdefault(metric.key, []).append(metric)


def set_tag(run: Run, key: str, value: str) -> None:
    run.tags[key] = value
    if key == RUN_NAME_TAG:
        run.run_name = value


def experiment_json(experiment: Experiment) -> dict[str, Any]:
    return _compact({"experiment_id": experiment.experiment_id, "name": experiment.name,
                     "artifact_location": experiment.artifact_location,
                     "lifecycle_stage": experiment.lifecycle_stage, "last_update_time": experiment.last_update_time,
                     "creation_time": experiment.creation_time, "tags": _pairs(experiment.tags)})


def metric_json(metric: Metric) -> dict[str, Any]:
    return {"key": metric.key, "value": metric.value, "timestamp": metric.timestamp, "step": metric.step}


def run_info_json(run: Run) -> dict[str, Any]:
    return _compact({"run_id": run.run_id, "run_uuid": run.run_id, "run_name": run.run_name,
                     "experiment_id": run.experiment_id, "user_id": run.user_id, "status": run.status,
                     "start_time": run.start_time, "end_time": run.end_time, "artifact_uri": run.artifact_uri,
                     "lifecycle_stage": run.lifecycle_stage})


def run_json(run: Run) -> dict[str, Any]:
    """``{info, data: {metrics (latest per key: highest step, then timestamp, then value), params, tags}}``."""
    latest = [max(history, key=lambda m: (m.step, m.timestamp, m.value)) for history in run.metrics.values()]
    data = _compact({"metrics": [metric_json(metric) for metric in latest], "params": _pairs(run.params),
                     "tags": _pairs(run.tags)})
    return {"info": run_info_json(run), "data": data}


def _pairs(values: dict[str, str]) -> list[dict[str, str]]:
    return [{"key": key, "value": value} for key, value in values.items()]


def _compact(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None and value != []}


# -- the simulator's channel ------------------------------------------------------------------------------------

def open_run(arn: str, experiment_name: str, run_name: str, start_time: float) -> str:
    """Create (or reuse) experiment ``experiment_name`` and start run ``run_name`` in it, as a training script's
    ``mlflow.set_experiment`` + ``mlflow.start_run`` do; returns the run id. Raises ``MlflowError``."""
    with core.transaction():
        data = tracking(arn)
        experiment = data.by_name(experiment_name) or data.create_experiment(experiment_name)
        return data.create_run(experiment.experiment_id, run_name, int(start_time * 1000)).run_id


def log_metrics(arn: str, run_id: str, metrics: list[tuple[str, float, float, int]]) -> None:
    """Log ``(key, value, timestamp in seconds, step)`` to the run; raises ``MlflowError``."""
    with core.transaction():
        run = tracking(arn).run(run_id)
        for key, value, at, step in metrics:
            log_metric(run, Metric(key, float(value), int(at * 1000), step))


def end_run(arn: str, run_id: str, status: str, end_time: float) -> None:
    """End the run with ``status`` (``FINISHED``, ``FAILED`` or ``KILLED``); raises ``MlflowError``."""
    with core.transaction():
        run = tracking(arn).run(run_id)
        run.status, run.end_time = status, int(end_time * 1000)
