"""The kubelet and the scheduler's binding, for every pod of a cluster.

- A pod bound to a Ready node starts after ``START_SECONDS`` (waiting ``ContainerCreating`` until then) and
  is Running; it is Ready once its longest readiness-probe ``initialDelaySeconds`` has passed.
- A pod without a node is placed by ``scheduler.Placement``. Pods that owners create through
  ``create_pod`` are placed at creation; a pod left unbound (no node fitted then, or created by a client)
  is re-created bound, with the same name and spec, once a node fits — the emulator has no ``pods/binding``
  subresource, so binding means replacing the Pending pod. Until then it carries ``PodScheduled=False``
  with the scheduler's explanation and one ``FailedScheduling`` event. A pod with scheduling gates is not placed
  (``PodScheduled=False``, ``SchedulingGated``); a pod an owner creates with a ``kueue.x-k8s.io/queue-name`` label
  on a cluster running task governance gets Kueue's gate (``taskgovernance.gated``).
- A pod on a node that is not Ready loses readiness; when the node is Ready again its containers restart
  (``restartCount`` + 1, the old log becomes ``previous``). A pod on a node that no longer exists is deleted
  at once (the pod garbage collector).
- A pod deleted gracefully (``deletionGracePeriodSeconds``) goes once that many nominal seconds have passed since
  the kubelet saw its ``deletionTimestamp`` (its containers do not exit early on SIGTERM, the harsher case).
- Pods never finish on their own: owners end them with ``finish`` (batch Jobs, training jobs).
- Model-serving pods (``serving``): an image that cannot be pulled keeps its pod Pending; one annotated to crash or
  run out of memory restarts in a loop. The AWS Load Balancer Controller's pods (``lbcontroller``) crash-loop while
  EKS Pod Identity gives them no credentials.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from sandbox import clock
from sandbox.sim import events, lbcontroller, objects, scheduler, serving, taskgovernance
from sandbox.sim.context import Context

START_SECONDS = 5.0
CONTROLLER = "pods"


def create_pod(ctx: Context, owner: dict[str, Any], template: dict[str, Any], *, name: str | None = None,
               generate_name: str | None = None, labels: dict[str, str] | None = None,
               env: dict[str, str] | None = None) -> dict[str, Any]:
    """Create a pod from ``template`` owned by ``owner``, placed on a node when one fits.

    Without ``name`` the pod is named ``<generate_name><5 random characters>`` (``generate_name`` defaults to
    ``<owner>-``). ``labels`` are added to the template's; ``env`` variables are added to every container
    unless the template sets them."""
    template = copy.deepcopy(template)
    metadata = template.get("metadata") or {}
    spec = template.get("spec") or {}
    for container in spec.get("containers") or []:
        present = {entry.get("name") for entry in container.get("env") or []}
        container["env"] = (container.get("env") or []) + [
            {"name": key, "value": value} for key, value in (env or {}).items() if key not in present]
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"labels": {**(metadata.get("labels") or {}), **(labels or {})},
                        "annotations": dict(metadata.get("annotations") or {}),
                        **({"name": name} if name else {"generateName": generate_name or f"{objects.name(owner)}-"})},
           "spec": spec}
    if taskgovernance.gated(ctx, owner, pod["metadata"]["labels"]):
        spec["schedulingGates"] = [*(spec.get("schedulingGates") or []), {"name": taskgovernance.GATE}]
    node_name, _ = scheduler.Placement.of(ctx).place({**pod, "metadata": {**pod["metadata"],
                                                                          "namespace": objects.namespace(owner)}})
    if node_name:
        spec["nodeName"] = node_name
    return ctx.create("pods", pod, owner)


def running(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") == "Running"


def ready(pod: dict[str, Any]) -> bool:
    return objects.condition_status(pod, "Ready") == "True"


def terminal(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in scheduler.TERMINAL


def _digest(*parts: str) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()


def _container_status(pod: dict[str, Any], container: dict[str, Any], state: dict[str, Any], ready_now: bool,
                      restarts: int = 0, last_state: dict[str, Any] | None = None) -> dict[str, Any]:
    image = str(container.get("image", ""))
    repository = image.split("@")[0].rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    return {"name": container["name"], "image": image, "imageID": f"{repository}@sha256:{_digest(image)}",
            "containerID": f"containerd://{_digest(objects.uid(pod), container['name'], str(restarts))}",
            "ready": ready_now, "started": "running" in state, "restartCount": restarts,
            "state": state, "lastState": last_state or {}}


def _addresses(pod: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    host_ip = next((entry["address"] for entry in (node.get("status") or {}).get("addresses") or []
                    if entry.get("type") == "InternalIP"), "10.0.0.10")
    number = int(_digest(objects.uid(pod))[:8], 16)
    first, second = host_ip.split(".")[:2]
    pod_ip = f"{first}.{second}.{128 + number % 120}.{number // 120 % 250 + 2}"
    return {"hostIP": host_ip, "hostIPs": [{"ip": host_ip}], "podIP": pod_ip, "podIPs": [{"ip": pod_ip}]}


def _conditions(pod: dict[str, Any], **states: bool) -> list[dict[str, Any]]:
    conditions = (pod.get("status") or {}).get("conditions")
    for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"):
        if kind in states:
            conditions = objects.condition(conditions, kind, "True" if states[kind] else "False",
                                           "" if states[kind] else ("PodCompleted" if terminal(pod)
                                                                    else "ContainersNotReady"))
    return conditions or []


def _starting_status(pod: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    containers = pod["spec"].get("containers") or []
    waiting = {"waiting": {"reason": "ContainerCreating"}}
    return {**(pod.get("status") or {}), "phase": "Pending", "startTime": objects.timestamp(),
            **_addresses(pod, node),
            "conditions": _conditions(pod, PodReadyToStartContainers=False, Initialized=True, Ready=False,
                                      ContainersReady=False, PodScheduled=True),
            "containerStatuses": [_container_status(pod, c, waiting, False) for c in containers]}


def _running_status(pod: dict[str, Any], ready_now: bool, restarts: int = 0,
                    last_state: dict[str, Any] | None = None) -> dict[str, Any]:
    status = pod.get("status") or {}
    previous = {entry["name"]: entry for entry in status.get("containerStatuses") or []}
    started = {"running": {"startedAt": objects.timestamp()}}
    statuses = []
    for container in pod["spec"].get("containers") or []:
        old = previous.get(container["name"]) or {}
        state = old["state"] if "running" in (old.get("state") or {}) and not restarts else started
        statuses.append(_container_status(pod, container, state, ready_now, old.get("restartCount", 0) + restarts,
                                          last_state if restarts else old.get("lastState")))
    return {**status, "phase": "Running",
            "conditions": _conditions(pod, PodReadyToStartContainers=True, Initialized=True, Ready=ready_now,
                                      ContainersReady=ready_now, PodScheduled=True),
            "containerStatuses": statuses}


def _ready_delay(pod: dict[str, Any]) -> float:
    delays = [int((c.get("readinessProbe") or {}).get("initialDelaySeconds") or 0)
              for c in pod["spec"].get("containers") or []]
    return float(max(delays, default=0))


def finish(ctx: Context, pod: dict[str, Any], exit_code: int = 0, reason: str = "Completed",
           message: str = "") -> dict[str, Any]:
    """End every container of ``pod`` with ``exit_code``: the pod Succeeds with 0 and Fails otherwise."""
    status = pod.get("status") or {}
    previous = {entry["name"]: entry for entry in status.get("containerStatuses") or []}
    now = objects.timestamp()
    statuses = []
    for container in pod["spec"].get("containers") or []:
        old = previous.get(container["name"]) or {}
        started_at = ((old.get("state") or {}).get("running") or {}).get("startedAt", now)
        terminated = {"exitCode": exit_code, "reason": reason, "startedAt": started_at, "finishedAt": now,
                      "containerID": old.get("containerID", "")}
        if message:
            terminated["message"] = message
        statuses.append(_container_status(pod, container, {"terminated": terminated}, False,
                                          old.get("restartCount", 0), old.get("lastState")))
    phase = "Succeeded" if exit_code == 0 else "Failed"
    ended = {**pod, "status": {**status, "phase": phase}}
    new_status = {**ended["status"], "containerStatuses": statuses,
                  "conditions": _conditions(ended, Ready=False, ContainersReady=False)}
    return ctx.set_status("pods", pod, new_status)


def restart_containers(ctx: Context, pod: dict[str, Any], exit_code: int = 137, reason: str = "Error") -> None:
    """Restart every container of a running ``pod`` in place (its log so far becomes ``previous``)."""
    for container in pod["spec"].get("containers") or []:
        ctx.store.restart_log(objects.own_namespace(pod), objects.name(pod), container["name"])
    last = {"terminated": {"exitCode": exit_code, "reason": reason, "finishedAt": objects.timestamp()}}
    ctx.set_status("pods", pod, _running_status(pod, True, restarts=1, last_state=last))


def _rebind(ctx: Context, pod: dict[str, Any], placement: scheduler.Placement) -> None:
    if pod["spec"].get("schedulingGates"):
        status = pod.get("status") or {}
        ctx.set_status("pods", pod, {**status, "phase": "Pending", "conditions": objects.condition(
            status.get("conditions"), "PodScheduled", "False", "SchedulingGated",
            "Scheduling is blocked due to non-empty scheduling gates")})
        return
    node_name, explanation = placement.place(pod)
    if node_name is None:
        status = pod.get("status") or {}
        conditions = objects.condition(status.get("conditions"), "PodScheduled", "False", "Unschedulable",
                                       explanation)
        if objects.condition_status(pod, "PodScheduled") != "False":
            events.record(ctx, pod, "FailedScheduling", explanation, kind="Warning", source="default-scheduler")
        ctx.set_status("pods", pod, {**status, "phase": "Pending", "conditions": conditions})
        return
    ctx.store.bind(objects.name(pod), objects.namespace(pod), node_name)


def _advance(ctx: Context, pod: dict[str, Any], node: dict[str, Any], memory: dict[str, Any]) -> None:
    state = memory.setdefault(objects.uid(pod), {"bound_at": ctx.now})
    phase = (pod.get("status") or {}).get("phase", "Pending")
    if not scheduler.node_ready(node):
        if phase == "Running" and ready(pod):
            state["disrupted"] = True
            ctx.set_status("pods", pod, _running_status(pod, False))
        return
    if phase == "Pending":
        if not pod.get("status", {}).get("containerStatuses"):
            ctx.set_status("pods", pod, _starting_status(pod, node))
            events.record(ctx, pod, "Scheduled", f"Successfully assigned {objects.namespace(pod)}/"
                          f"{objects.name(pod)} to {objects.name(node)}", source="default-scheduler")
        elif clock.due(state["bound_at"], START_SECONDS):
            unpullable = serving.pull_fails(pod)
            if unpullable:
                serving.refuse_pull(ctx, pod, unpullable, state)
                return
            state["running_at"] = ctx.now
            pod = ctx.set_status("pods", pod, _running_status(pod, False))
            events.record(ctx, pod, "Started", "Started container " + ", ".join(
                c["name"] for c in pod["spec"].get("containers") or []), source="kubelet")
    if phase != "Running" and "running_at" not in state:
        return
    if state.pop("disrupted", False):
        restart_containers(ctx, pod, reason="Unknown")
        return
    if lbcontroller.hold(ctx, pod, state) or serving.hold(ctx, pod, state):
        return
    state.setdefault("running_at", ctx.now)
    if not ready(pod) and clock.due(state["running_at"], _ready_delay(pod)):
        ctx.set_status("pods", pod, _running_status(pod, True))


def _terminate(ctx: Context, pod: dict[str, Any], on_a_node: bool, memory: dict[str, Any]) -> None:
    """A pod being deleted gracefully goes once its grace period has passed (at once when its node is gone)."""
    grace = int(pod["metadata"].get("deletionGracePeriodSeconds") or 0)
    if not grace:
        return
    since = memory.setdefault(objects.uid(pod), {}).setdefault("terminating_since", ctx.now)
    if not on_a_node or clock.due(since, grace):
        ctx.store.delete("pods", objects.name(pod), objects.namespace(pod), grace_period=0)


def reconcile(ctx: Context) -> None:
    """One kubelet pass over every pod of the cluster (see the module docstring)."""
    pods = ctx.list("pods")
    memory = ctx.remembered(CONTROLLER, pods)
    nodes = {objects.name(node): node for node in ctx.list("nodes")}
    placement = scheduler.Placement.of(ctx)
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            with ctx.guard(f"pod {objects.namespace(pod)}/{objects.name(pod)}"):
                _terminate(ctx, pod, pod["spec"].get("nodeName") in nodes, memory)
            continue
        if terminal(pod):
            continue
        with ctx.guard(f"pod {objects.namespace(pod)}/{objects.name(pod)}"):
            node_name = pod["spec"].get("nodeName")
            if not node_name:
                _rebind(ctx, pod, placement)
            elif node_name not in nodes:
                ctx.store.delete("pods", objects.name(pod), objects.namespace(pod), grace_period=0)
            else:
                _advance(ctx, pod, nodes[node_name], memory)
