"""KEDA autoscaling of an endpoint under a load ramp: how long from the metric crossing its target to the new replica
serving, and from the load ending to the scale-in — beside KEDA's polling interval and cooldown, the floor.

``.venv/bin/python -m bench.autoscaling_bench`` (``--help`` lists the knobs). Runs the sandbox in this process (AWS,
the Kubernetes emulator, the simulator) with one EKS + HyperPod cluster of GPU nodes, applies KEDA's vendored release
manifests (``clusters/vendor/keda``), and a vLLM Deployment behind Service ``qwen`` that runs one request at a time
(``--max-num-seqs 1``) and streams a token every ``--token-seconds`` (simulated), with the ScaledObject InstantStart
makes for ``waiting_requests`` (``inference.endpoints.autoscaling``: ``metrics-api`` over every server's
``/metrics``). Then, for each step of the ramp (``--ramp``: concurrent clients, each sending streamed chats back to
back): the load starts; **cross** is when the waiting requests summed over the ready replicas first exceed target ×
replicas (read from the servers' ``/metrics`` through the pod proxy every ``--sample`` s); **serving** when the
Deployment has a ready replica more than before; then the clients stop sending (the load ends; what is queued
drains); **in** when the replicas are back at the minimum.

Times are simulated seconds (real ÷ ``--time-scale``). Each row is printed as soon as its step ends; a step that
fails prints its error and the ramp goes on. The floor of scale-out is the HPA's 15 s sync (KEDA's polling interval
for a wake from zero) plus a replica's start; the floor of scale-in is the cooldown (the HPA's scale-down
stabilization window, which InstantStart sets to the cooldown).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")

NAMESPACE = "bench"
NAME = "qwen"
HPA_SYNC = 15


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ramp", default="3,5,8", help="concurrent clients of each step, comma-separated")
    parser.add_argument("--target", type=float, default=1.0, help="waiting requests per replica (the target)")
    parser.add_argument("--max-replicas", type=int, default=4)
    parser.add_argument("--polling", type=int, default=15, help="KEDA pollingInterval, seconds")
    parser.add_argument("--cooldown", type=int, default=60, help="cooldown (and scale-down window), seconds")
    parser.add_argument("--token-seconds", type=float, default=2.0, help="simulated seconds per streamed token")
    parser.add_argument("--tokens", type=int, default=16, help="max_tokens of every chat")
    parser.add_argument("--hold", type=float, default=240, help="simulated seconds each step keeps its load")
    parser.add_argument("--time-scale", type=float, default=0.02, help="sandbox time scale")
    parser.add_argument("--sample", type=float, default=0.02, help="real seconds between metric samples")
    args = parser.parse_args()
    os.environ.setdefault("INSTANTSTART_SANDBOX_STATE_DIR", tempfile.mkdtemp(prefix="autoscaling-bench-"))

    import django

    django.setup()
    from kubernetes import client as k8s

    from cloud import kube, kube_manifests
    from clusters.features import keda
    from sandbox import clock
    from sandbox.main import start_world
    from sandbox.sim.serving import TOKEN_SECONDS_ANNOTATION

    world = start_world(aws_port=0, kube_port=0)
    os.environ.update({"AWS_ENDPOINT_URL": world.aws_url, "AWS_ACCESS_KEY_ID": "bench",
                       "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-west-2"})
    from tests.clusters.sandbox import instant_clock, make_eks_cluster, make_hyperpod_cluster

    def nominal(real: float) -> float:
        return real / args.time_scale

    try:
        with instant_clock():
            eks = make_eks_cluster("bench")
            make_hyperpod_cluster(eks, "bench", instance_type="ml.g5.12xlarge", count=2)
            api = kube.api_client("bench", region="us-west-2")
            core, apps = k8s.CoreV1Api(api), k8s.AppsV1Api(api)
            for manifest in keda.release_manifests():
                kube_manifests.create(api, manifest)
            core.create_namespace({"metadata": {"name": NAMESPACE}})
            labels = {"instantstart.io/endpoint": NAME}
            apps.create_namespaced_deployment(NAMESPACE, {"metadata": {"name": NAME, "labels": labels}, "spec": {
                "replicas": 1, "selector": {"matchLabels": labels}, "template": {
                    "metadata": {"labels": labels,
                                 "annotations": {TOKEN_SECONDS_ANNOTATION: str(args.token_seconds)}},
                    "spec": {"containers": [{
                        "name": "server", "image": "vllm/vllm-openai:v0.10.1",
                        "command": ["vllm", "serve", "m", "--served-model-name", NAME, "--max-num-seqs", "1"],
                        "ports": [{"containerPort": 8000}],
                        "readinessProbe": {"httpGet": {"path": "/health", "port": 8000},
                                           "initialDelaySeconds": 30, "periodSeconds": 5}}]}}}})
            core.create_namespaced_service(NAMESPACE, {"metadata": {"name": NAME}, "spec": {
                "selector": labels, "ports": [{"port": 80, "targetPort": 8000}]}})
            while not (apps.read_namespaced_deployment("keda-operator", "keda").status.available_replicas
                       and apps.read_namespaced_deployment(NAME, NAMESPACE).status.ready_replicas):
                time.sleep(0.05)
        clock.set_scale(args.time_scale)
        scaled = {"apiVersion": "keda.sh/v1alpha1", "kind": "ScaledObject",
                  "metadata": {"name": NAME, "namespace": NAMESPACE},
                  "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME},
                           "pollingInterval": args.polling, "cooldownPeriod": args.cooldown, "minReplicaCount": 1,
                           "maxReplicaCount": args.max_replicas,
                           "advanced": {"horizontalPodAutoscalerConfig": {"behavior": {"scaleDown": {
                               "stabilizationWindowSeconds": args.cooldown}}}},
                           "triggers": [{"type": "metrics-api", "metricType": "AverageValue", "metadata": {
                               "url": f"http://{NAME}.{NAMESPACE}.svc.cluster.local:8000/metrics",
                               "format": "prometheus", "valueLocation": "vllm:num_requests_waiting",
                               "aggregateFromKubeServiceEndpoints": "true", "aggregationType": "sum",
                               "targetValue": str(args.target), "activationTargetValue": "0"}}]}}
        k8s.CustomObjectsApi(api).create_namespaced_custom_object("keda.sh", "v1alpha1", NAMESPACE, "scaledobjects",
                                                                  scaled)

        def ready_pods() -> list[str]:
            pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"instantstart.io/endpoint={NAME}").items
            return [pod.metadata.name for pod in pods if not pod.metadata.deletion_timestamp and any(
                c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])]

        def waiting() -> float:
            total = 0.0
            for pod in ready_pods():
                try:
                    text = kube_manifests.send(api, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{pod}:8000/proxy/"
                                                           "metrics").decode()
                except Exception:  # a pod going away mid-sample counts nothing
                    continue
                total += sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                             if line.startswith("vllm:num_requests_waiting{"))
            return total

        def ready_replicas() -> int:
            status = apps.read_namespaced_deployment(NAME, NAMESPACE).status
            return int((status.ready_replicas if status else 0) or 0)

        def wait(condition: Any, limit: float) -> float:
            deadline = time.monotonic() + limit
            while time.monotonic() < deadline:
                if condition():
                    return time.monotonic()
                time.sleep(args.sample)
            raise TimeoutError(f"not within {nominal(limit):.0f} simulated s")

        body = {"model": NAME, "messages": [{"role": "user", "content": "ramp"}], "max_tokens": args.tokens,
                "stream": True}
        url = f"/api/v1/namespaces/{NAMESPACE}/services/{NAME}:80/proxy/v1/chat/completions"

        print(f"floor: HPA sync {HPA_SYNC} s, KEDA pollingInterval {args.polling} s, cooldown {args.cooldown} s; "
              f"target {args.target:g} waiting/replica; time scale {args.time_scale}", flush=True)
        print(f"{'clients':>7} {'replicas':>9} {'cross→serving s':>16} {'end→in s':>9} {'polling s':>9} "
              f"{'cooldown s':>10}", flush=True)
        limit = args.hold * args.time_scale

        def step(clients: int) -> str:
            """One step of the ramp, as its printed row (raises when it does not complete)."""
            stop = threading.Event()

            def client() -> None:
                while not stop.is_set():
                    try:
                        kube_manifests.send(api, "POST", url, body=body)
                    except Exception:  # a refused call is retried, as a client would
                        time.sleep(args.sample)

            threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
            try:
                before = ready_replicas()
                for thread in threads:
                    thread.start()
                crossed = wait(lambda: waiting() > args.target * max(ready_replicas(), 1), limit)
                serving = wait(lambda: ready_replicas() > before, limit)
                peak = ready_replicas()
                stop.set()  # the load ends: no new request; the queued ones drain
                ended = time.monotonic()
                scaled_in = wait(lambda: ready_replicas() <= 1 and len(ready_pods()) <= 1,
                                 (args.cooldown * 4 + 120) * args.time_scale)
            finally:
                stop.set()
                for thread in threads:
                    thread.join(timeout=limit)
            return (f"{clients:>7} {before:>4}→{peak:<4} {nominal(serving - crossed):>16.1f} "
                    f"{nominal(scaled_in - ended):>9.1f} {args.polling:>9} {args.cooldown:>10}")

        for clients in (int(text) for text in args.ramp.split(",")):
            try:
                print(step(clients), flush=True)
            except Exception as error:  # the row says what failed; the ramp goes on
                print(f"{clients:>7} failed: {type(error).__name__}: {error}", flush=True)
    finally:
        world.stop()


if __name__ == "__main__":
    main()
