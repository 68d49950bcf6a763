"""Watch streams and pod logs, including follow and ``sinceTime`` resume."""

from __future__ import annotations

import json
import threading
import time

import pytest
from kubernetes import client as k8s
from kubernetes import watch
from kubernetes.watch.watch import iter_resp_lines

from sandbox.kube import store as store_module
from tests.sandbox.kube.conftest import pod, raw


def later(seconds: float, action) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), action()), daemon=True)
    thread.start()
    return thread


def test_watch_starts_with_current_state_and_streams_changes(core, store):
    core.create_namespaced_pod("default", pod("existing", labels={"app": "x"}))

    def changes():
        store.create("pods", pod("fresh", labels={"app": "x"}), "default")
        store.patch("pods", "fresh", {"metadata": {"labels": {"app": "y"}}}, "default")
        store.create("pods", pod("ignored", labels={"app": "z"}), "default")
        store.delete("pods", "existing", "default")

    later(0.3, changes)
    seen = []
    watcher = watch.Watch()
    for event in watcher.stream(core.list_namespaced_pod, "default", label_selector="app=x", timeout_seconds=5):
        seen.append((event["type"], event["object"].metadata.name))
        if len(seen) == 4:
            watcher.stop()
    assert seen == [("ADDED", "existing"), ("ADDED", "fresh"), ("DELETED", "fresh"), ("DELETED", "existing")]


def test_watch_from_a_resource_version_replays_what_followed(core):
    listed = core.list_namespaced_config_map("default")
    core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    core.patch_namespaced_config_map("a", "default", {"data": {"k": "v"}})
    events = [(e["type"], e["object"].data) for e in watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=listed.metadata.resource_version,
        timeout_seconds=1)]
    assert events == [("ADDED", None), ("MODIFIED", {"k": "v"})]


def test_a_compacted_resource_version_is_gone_and_a_relist_resumes(api, core, store, monkeypatch):
    monkeypatch.setattr(store_module, "HISTORY", 3)
    start = core.list_namespaced_config_map("default").metadata.resource_version
    for index in range(5):
        store.create("configmaps", {"metadata": {"name": f"c{index}"}}, "default")
    status, answer = raw(api, "GET", "/api/v1/namespaces/default/configmaps",
                         query={"watch": "true", "resourceVersion": start, "timeoutSeconds": "1"})
    assert status == 200  # the stream starts; the error travels on it, as the API server sends it
    assert (answer["type"], answer["object"]["kind"], answer["object"]["code"], answer["object"]["reason"]) == (
        "ERROR", "Status", 410, "Expired")
    with pytest.raises(k8s.ApiException) as raised:  # the client retries once, then raises
        list(watch.Watch().stream(core.list_namespaced_config_map, "default", resource_version=start,
                                  timeout_seconds=1))
    assert raised.value.status == 410
    relisted = core.list_namespaced_config_map("default")  # what a watcher does on 410: list again, watch from there
    later(0.2, lambda: store.create("configmaps", {"metadata": {"name": "after"}}, "default"))
    events = [(e["type"], e["object"].metadata.name) for e in watch.Watch().stream(
        core.list_namespaced_config_map, "default", resource_version=relisted.metadata.resource_version,
        timeout_seconds=1)]
    assert events == [("ADDED", "after")]


def test_dynamic_client_watch_with_bookmarks(dynamic, store):
    config_maps = dynamic.resources.get(api_version="v1", kind="ConfigMap")
    later(0.2, lambda: store.create("configmaps", {"metadata": {"name": "late"}}, "default"))
    events = [(e["type"], e["object"].metadata.name) for e in config_maps.watch(
        namespace="default", timeout=1, allow_watch_bookmarks=True, field_selector="metadata.name=late")]
    assert events[0] == ("ADDED", "late") and events[-1][0] == "BOOKMARK"


def test_logs_with_options_and_kubelet_errors(core, store):
    core.create_namespaced_pod("default", pod("trainer", containers=("main", "sidecar")))
    with pytest.raises(k8s.ApiException) as raised:
        core.read_namespaced_pod_log("trainer", "default")
    assert raised.value.status == 400 and "choose one of: [main sidecar]" in json.loads(raised.value.body)["message"]
    with pytest.raises(k8s.ApiException) as raised:
        core.read_namespaced_pod_log("trainer", "default", container="main")
    assert "is waiting to start: ContainerCreating" in json.loads(raised.value.body)["message"]
    base = time.time() - 100
    for index in range(5):
        store.append_log("default", "trainer", "main", f"step {index}", timestamp=base + index)
    assert core.read_namespaced_pod_log("trainer", "default", container="main", tail_lines=2) == "step 3\nstep 4\n"
    stamped = core.read_namespaced_pod_log("trainer", "default", container="main", timestamps=True, tail_lines=1)
    assert stamped.endswith("Z step 4\n") and stamped[:4].isdigit()
    with pytest.raises(k8s.ApiException) as raised:
        core.read_namespaced_pod_log("trainer", "default", container="main", previous=True)
    assert raised.value.status == 400
    assert core.read_namespaced_pod_log("trainer", "default", container="main", limit_bytes=3) == "ste"
    store.restart_log("default", "trainer", "main")
    assert core.read_namespaced_pod_log("trainer", "default", container="main", previous=True).count("\n") == 5


def test_follow_streams_until_the_pod_finishes_and_resumes_with_since_time(core, store):
    core.create_namespaced_pod("default", pod("worker"))
    store.patch("pods", "worker", {"status": {"phase": "Running"}}, "default", subresource="status")
    store.append_log("default", "worker", "main", "loss=2.0")

    def train():
        for step in range(1, 4):
            time.sleep(0.1)
            store.append_log("default", "worker", "main", f"loss={2.0 - step / 2}")
        store.patch("pods", "worker", {"status": {"phase": "Succeeded"}}, "default", subresource="status")

    later(0.2, train)
    response = core.read_namespaced_pod_log("worker", "default", follow=True, timestamps=True, _preload_content=False)
    lines = [line for line in iter_resp_lines(response)]
    assert [line.split(" ", 1)[1] for line in lines] == ["loss=2.0", "loss=1.5", "loss=1.0", "loss=0.5"]
    # The generated client has no since_time parameter: followers resume with the raw query parameter.
    resumed = raw(core.api_client, "GET", "/api/v1/namespaces/default/pods/worker/log",
                  query={"sinceTime": lines[2].split(" ", 1)[0]})
    assert resumed == (200, "loss=1.0\nloss=0.5\n")


def test_follow_ends_when_the_pod_is_deleted(core, store):
    core.create_namespaced_pod("default", pod("short"))
    store.append_log("default", "short", "main", "hello")
    later(0.3, lambda: store.delete("pods", "short", "default"))
    started = time.monotonic()
    response = core.read_namespaced_pod_log("short", "default", follow=True, _preload_content=False)
    assert list(iter_resp_lines(response)) == ["hello"]
    assert time.monotonic() - started < 3
