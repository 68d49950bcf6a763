"""Chat through the Kubernetes API server's service proxy vs straight to the server: latency (p50/p99) of whole
chat completions, tokens per second while streaming, and 20 concurrent streams.

``.venv/bin/python -m bench.inference_chat_bench`` (``--help`` lists the knobs). Runs the sandbox in this process
(AWS, the Kubernetes emulator, the simulator) with one EKS + HyperPod cluster and a vLLM replica behind Service
``qwen``, then times:

- **proxy**: ``POST …/services/qwen:80/proxy/v1/chat/completions`` with the product's kubernetes client and EKS
  token (what ``inference.endpoints.calls`` sends);
- **pod**: the same through the Pod's ``proxy`` subresource (no Service lookup);
- **direct**: the model server's own answer, called in-process (the ceiling: no HTTP, no TLS, no API server).

Streaming sends ``max_tokens`` words at the sandbox's per-token pace (``clock.duration(0.02)`` s), so tokens/s
compares the transport, not a GPU. See ``bench/README.md`` for the last numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import threading
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="whole chat completions per path")
    parser.add_argument("--tokens", type=int, default=64, help="max_tokens of every call")
    parser.add_argument("--streams", type=int, default=20, help="concurrent streams in the last phase")
    parser.add_argument("--time-scale", type=float, default=0.05, help="sandbox time scale (per-token pace)")
    args = parser.parse_args()
    os.environ.setdefault("INSTANTSTART_SANDBOX_STATE_DIR", tempfile.mkdtemp(prefix="inference-bench-"))

    import django

    django.setup()
    from kubernetes import client as k8s

    from cloud import kube
    from sandbox import clock
    from sandbox.main import start_world
    from sandbox.sim import serving

    world = start_world(aws_port=0, kube_port=0)
    os.environ.update({"AWS_ENDPOINT_URL": world.aws_url, "AWS_ACCESS_KEY_ID": "bench",
                       "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-west-2"})
    from tests.clusters.sandbox import instant_clock, make_eks_cluster, make_hyperpod_cluster

    try:
        with instant_clock():
            eks = make_eks_cluster("bench")
            make_hyperpod_cluster(eks, "bench", instance_type="ml.g5.8xlarge", count=1)
            api = kube.api_client("bench", region="us-west-2")
            core = k8s.CoreV1Api(api)
            core.create_namespace({"metadata": {"name": "bench"}})
            labels = {"instantstart.io/endpoint": "qwen"}
            core.create_namespaced_pod("bench", {"metadata": {"name": "qwen-0", "labels": labels}, "spec": {
                "containers": [{"name": "server", "image": "vllm/vllm-openai:v0.10.1",
                                "command": ["vllm", "serve", "m", "--served-model-name", "qwen"]}]}})
            core.create_namespaced_service("bench", {"metadata": {"name": "qwen"}, "spec": {
                "selector": labels, "ports": [{"port": 80, "targetPort": 8000}]}})
            while not any(c.type == "Ready" and c.status == "True"
                          for c in (core.read_namespaced_pod("qwen-0", "bench").status.conditions or [])):
                time.sleep(0.05)
        clock.set_scale(args.time_scale)
        pod = json.loads(core.read_namespaced_pod("qwen-0", "bench", _preload_content=False).data)
        body = {"model": "qwen", "messages": [{"role": "user", "content": "Benchmark the proxy"}],
                "max_tokens": args.tokens}

        def via(path: str, stream: bool = False):
            verb, url, headers, payload, _ = api.param_serialize(
                "POST", path, body={**body, "stream": stream}, auth_settings=["BearerToken"],
                header_params={"Content-Type": "application/json"})
            return api.call_api(verb, url, header_params=headers, body=payload).response

        routes = {"proxy": "/api/v1/namespaces/bench/services/qwen:80/proxy/v1/chat/completions",
                  "pod": "/api/v1/namespaces/bench/pods/qwen-0:8000/proxy/v1/chat/completions"}

        def whole(name: str) -> None:
            if name == "direct":
                serving.answer("bench", pod, "POST", "/v1/chat/completions", json.dumps(body).encode())
                return
            response = via(routes[name])
            response.data  # noqa: B018 - read the whole answer
            response.release_conn()

        def streamed(name: str) -> int:
            if name == "direct":
                _, _, chunks = serving.answer("bench", pod, "POST", "/v1/chat/completions",
                                              json.dumps({**body, "stream": True}).encode())
                return sum(1 for _ in chunks)  # type: ignore[union-attr]
            response = via(routes[name], stream=True)
            count = sum(chunk.count(b"data: ") for chunk in response.stream(1024))
            response.release_conn()
            return count

        print(f"{'path':8} {'p50 ms':>8} {'p99 ms':>8} {'stream tok/s':>13}")
        results = {}
        for name in ("direct", "pod", "proxy"):
            latencies = []
            for _ in range(args.calls):
                started = time.perf_counter()
                whole(name)
                latencies.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            streamed(name)
            rate = args.tokens / (time.perf_counter() - started)
            results[name] = (statistics.median(latencies), _percentile(latencies, 0.99), rate)
            print(f"{name:8} {results[name][0]:8.2f} {results[name][1]:8.2f} {rate:13.1f}")
        print(f"proxy / direct p50 latency ratio: {results['proxy'][0] / max(results['direct'][0], 1e-6):.1f}; "
              f"proxy / pod: {results['proxy'][0] / results['pod'][0]:.2f}")

        done: list[float] = []
        lock = threading.Lock()

        def one() -> None:
            started = time.perf_counter()
            streamed("proxy")
            with lock:
                done.append(time.perf_counter() - started)

        threads = [threading.Thread(target=one) for _ in range(args.streams)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        print(f"{args.streams} concurrent proxy streams: {wall:.2f} s wall, slowest {max(done):.2f} s, "
              f"{args.streams * args.tokens / wall:.0f} tokens/s in total")
    finally:
        world.stop()


if __name__ == "__main__":
    main()
