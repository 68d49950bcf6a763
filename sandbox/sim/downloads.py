"""Model download Jobs: a batch Job labelled ``instantstart.io/model-download`` whose pod copies a model into S3.

The pod's ``download`` container says what to fetch in its environment (``inference.downloads.manifests`` writes
it): ``DOWNLOAD_SOURCE`` ``hub`` (``HF_REPO_ID``, ``HF_REVISION``, space-separated ``HF_INCLUDE``/``HF_EXCLUDE``
globs, ``HF_TOKEN`` from a Secret) or ``s3`` (``SOURCE_URI``), and ``DEST_URI`` (``s3://bucket/prefix/``).

Once the pod runs, files land in the sandbox's S3 one after another at ``BYTES_PER_SECOND`` (nominal), large ones
sparse (``sandbox.aws.s3_objects``), each logged as ``hf download`` / ``aws s3 cp`` would; then the pod exits 0. An
unknown repository or revision, a gated one without a token that may read it (``sandbox.hub``), or a missing
source exits 1 with the error the real tool prints, and the Job fails (the product sets ``backoffLimit: 0``). The
batch Job controller (``sandbox.sim.jobs``) leaves these pods' timing to this one.
"""

from __future__ import annotations

import base64
import fnmatch
import json
from typing import Any

from sandbox import clock, hub
from sandbox.aws import s3_objects
from sandbox.sim import objects, pods
from sandbox.sim.context import Context

LABEL = "instantstart.io/model-download"
CONTAINER = "download"
BYTES_PER_SECOND = 500_000_000
CONTROLLER = "downloads"

Plan = list[tuple[str, int, bytes | None]]


def drives(job: dict[str, Any]) -> bool:
    """Whether this controller runs ``job``'s pods (the batch Job controller then only counts them)."""
    return LABEL in objects.labels(job)


def _env(ctx: Context, pod: dict[str, Any]) -> dict[str, str]:
    container: dict[str, Any] = next((c for c in pod["spec"].get("containers") or [] if c.get("name") == CONTAINER), {})
    env: dict[str, str] = {}
    for entry in container.get("env") or []:
        if "value" in entry:
            env[entry["name"]] = str(entry["value"])
            continue
        ref = (entry.get("valueFrom") or {}).get("secretKeyRef") or {}
        secret = ctx.store.find("secrets", ref.get("name", ""), objects.namespace(pod)) if ref else None
        data = (secret or {}).get("data") or {}
        if ref.get("key") in data:
            env[entry["name"]] = base64.b64decode(data[ref["key"]]).decode()
    return env


def _split_uri(uri: str) -> tuple[str, str]:
    bucket, _, prefix = uri.removeprefix("s3://").partition("/")
    return bucket, prefix


def _content(name: str, size: int, repo: hub.Repo) -> bytes | None:
    """A ``config.json`` holds real JSON (padded with spaces to the size the Hub lists); other files are zeros."""
    if name != "config.json":
        return None
    text = json.dumps({"_name_or_path": repo.repo_id, "architectures": ["ForCausalLM"],
                       "model_type": repo.repo_id.split("/")[-1].split("-")[0].lower()}).encode()
    return text + b" " * max(size - len(text), 0)


def _hub_plan(env: dict[str, str]) -> tuple[Plan, str]:
    repo = hub.REPOS.get(env.get("HF_REPO_ID", ""))
    revision = env.get("HF_REVISION") or "main"
    if repo is None:
        return [], (f"huggingface_hub.errors.RepositoryNotFoundError: 401 Client Error. Repository Not Found for url: "
                    f"{hub.PREFIX}/api/models/{env.get('HF_REPO_ID')}/revision/{revision}.")
    if not repo.has(revision):
        return [], (f"huggingface_hub.errors.RevisionNotFoundError: 404 Client Error. Revision Not Found for url: "
                    f"{hub.PREFIX}/api/models/{repo.repo_id}/revision/{revision}.")
    if not hub.may_read(repo, env.get("HF_TOKEN")):
        return [], (f"huggingface_hub.errors.GatedRepoError: 401 Client Error. Cannot access gated repo for url "
                    f"{hub.PREFIX}/{repo.repo_id}/resolve/{revision}/config.json. Access to model {repo.repo_id} "
                    "is restricted. You must have access to it and be authenticated to access it.")
    include, exclude = env.get("HF_INCLUDE", "").split(), env.get("HF_EXCLUDE", "").split()
    return [(name, size, _content(name, size, repo)) for name, size in repo.files
            if (not include or any(fnmatch.fnmatch(name, glob) for glob in include))
            and not any(fnmatch.fnmatch(name, glob) for glob in exclude)], ""


def _s3_plan(env: dict[str, str]) -> tuple[Plan, str]:
    bucket, prefix = _split_uri(env.get("SOURCE_URI", ""))
    try:
        found = s3_objects.listing(bucket, prefix)
    except s3_objects.NoSuchBucket:
        return [], "fatal error: An error occurred (NoSuchBucket) when calling the ListObjectsV2 operation: " \
                   "The specified bucket does not exist"
    return [(f"{bucket}/{key}", size, None) for key, size in found], ""


def _start(ctx: Context, pod: dict[str, Any]) -> dict[str, Any]:
    env = _env(ctx, pod)
    plan, error = _hub_plan(env) if env.get("DOWNLOAD_SOURCE") == "hub" else _s3_plan(env)
    return {"env": env, "plan": plan, "error": error, "started": ctx.now, "done": 0}


def _log(ctx: Context, pod: dict[str, Any], line: str) -> None:
    ctx.store.append_log(objects.own_namespace(pod), objects.name(pod), CONTAINER, line)


def _write(ctx: Context, pod: dict[str, Any], state: dict[str, Any]) -> None:
    env, plan = state["env"], state["plan"]
    dest_bucket, dest_prefix = _split_uri(env.get("DEST_URI", ""))
    source_prefix = _split_uri(env.get("SOURCE_URI", ""))[1] if env.get("DOWNLOAD_SOURCE") == "s3" else ""
    elapsed_bytes = sum(size for _, size, _ in plan[:state["done"] + 1])
    while state["done"] < len(plan) and clock.due(state["started"], elapsed_bytes / BYTES_PER_SECOND):
        name, size, content = plan[state["done"]]
        if env.get("DOWNLOAD_SOURCE") == "s3":
            bucket, key = name.split("/", 1)
            relative = key[len(source_prefix):].lstrip("/")
            s3_objects.copy(bucket, key, dest_bucket, f"{dest_prefix}{relative}")
            _log(ctx, pod, f"copy: s3://{name} to s3://{dest_bucket}/{dest_prefix}{relative}")
        else:
            s3_objects.put(dest_bucket, f"{dest_prefix}{name}", size, content)
            _log(ctx, pod, f"Downloaded {name} ({size} bytes)")
        state["done"] += 1
        if state["done"] < len(plan):
            elapsed_bytes += plan[state["done"]][1]


def _sync(ctx: Context, pod: dict[str, Any], state: dict[str, Any]) -> None:
    if not state:
        state.update(_start(ctx, pod))
        if state["error"]:
            _log(ctx, pod, state["error"])
            pods.finish(ctx, pod, 1, "Error")
            return
        what = state["env"].get("HF_REPO_ID") or state["env"].get("SOURCE_URI")
        _log(ctx, pod, f"Fetching {len(state['plan'])} files from {what}")
    try:
        _write(ctx, pod, state)
    except s3_objects.NoSuchBucket as error:
        _log(ctx, pod, f"upload failed: An error occurred (NoSuchBucket): {error}")
        pods.finish(ctx, pod, 1, "Error")
        return
    if state["done"] >= len(state["plan"]):
        _log(ctx, pod, f"Download complete: {len(state['plan'])} files in {state['env'].get('DEST_URI')}")
        pods.finish(ctx, pod, 0, "Completed")


def reconcile(ctx: Context) -> None:
    all_pods = ctx.list("pods")
    memory = ctx.remembered(CONTROLLER, all_pods)
    for job in ctx.list("jobs"):
        if not drives(job):
            continue
        for pod in objects.owned_by(all_pods, job):
            if pods.running(pod) and not pod["metadata"].get("deletionTimestamp"):
                with ctx.guard(f"model download {objects.namespace(pod)}/{objects.name(pod)}"):
                    _sync(ctx, pod, memory.setdefault(objects.uid(pod), {}))
