"""REST list endpoints against a bare Django view over the same rows: p50/p95 of each, and product ÷ baseline.

``.venv/bin/python -m bench.rest_lists_bench`` (``--help`` for the knobs). See ``bench/README.md`` for the last numbers.

The run:

1. a fresh PostgreSQL database (``--database-url``, dropped, created and migrated) and a private Redis (the cache the
   throttles count in);
2. one team, its admin and the admin's API token, and ``--rows`` rows of each listed kind for that team: operations
   (five phases each, the demo pipeline's), clusters, training jobs and endpoints (each on a cluster and following an
   operation, as the services leave them) and audit events;
3. for each list, ``--requests`` pairs of in-process requests (``django.test.Client``: the whole middleware stack,
   no socket), alternating product and baseline so both see the same load: the product's ``GET /api/v1/<list>`` with
   ``?page_size=`` and the token, and the baseline — a plain Django view behind the same middleware that resolves the
   same token (``accounts.authentication.user_for_secret``), narrows to the same teams (``access.visible``) and
   answers ``JsonResponse`` of ``.values()`` of the same page (the same first ``page_size + 1`` rows the cursor
   paginator reads, the columns the product shows, the names of related rows by join, an operation's phases in a
   second query).

Each list's row is printed as soon as it is measured (a failed row prints its error and the run goes on): milliseconds
at p50 and p95 of both, their ratios, and the SQL queries of one request of each. The load average is printed at the
start and at the end, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from bench import operations_bench as ob

COLUMNS = ("list", "rows", "product p50", "product p95", "baseline p50", "baseline p95", "ratio p50", "ratio p95",
           "queries")
PHASES = ("bucket", "network", "role", "eks", "addon")
PHASE_COLUMNS = ("operation_id", "index", "slug", "title", "state", "step", "attempts", "polls", "status_reason",
                 "reference", "error_code", "error_message", "error_detail", "started_at", "finished_at",
                 "deadline_at")


@dataclass(frozen=True)
class Listing:
    """One REST list and what its baseline reads: ``model``'s rows the actor sees, narrowed by ``narrow``, as
    ``columns`` (``.values()`` names, joins included)."""

    path: str
    model: str
    columns: tuple[str, ...]
    narrow: Callable[[Any], Any] = lambda rows: rows


@functools.cache
def listings() -> dict[str, Listing]:
    """The lists measured, by name (the models are imported once Django is set up)."""
    from accounts.models import AuditEvent
    from clusters.models import Cluster, ClusterState
    from inference.models import Endpoint, EndpointState
    from operations.models import Operation
    from training.models import TrainingJob

    return {
        "operations": Listing("operations", Operation, (
            "id", "team_id", "kind", "title", "target_type", "target_id", "state", "phase", "status_reason",
            "error_code", "error_message", "attempt", "cancel_requested", "params", "outputs", "source",
            "created_by__username", "created_at", "started_at", "finished_at", "updated_at", "next_poll_at",
            "deadline_at")),
        "clusters": Listing("clusters", Cluster, (
            "id", "team_id", "team__name", "name", "region", "state", "origin", "spec", "eks_name", "eks_arn",
            "eks_status", "kubernetes_version", "eks_endpoint", "oidc_issuer", "hyperpod_name", "hyperpod_arn",
            "hyperpod_status", "node_recovery", "node_count", "gpu_count", "tags", "drift", "refreshed_at",
            "created_by__username", "created_at", "updated_at", "deleted_at"),
            lambda rows: rows.exclude(state=ClusterState.DELETED)),
        "training-jobs": Listing("training-jobs", TrainingJob, (
            "id", "team_id", "cluster_id", "cluster__name", "name", "namespace", "recipe", "path", "state",
            "status_reason", "instance_group", "instance_type", "replicas", "processes_per_node", "restarts_used",
            "restarts_total", "metrics", "operation_id", "last_seq", "logs_complete", "resubmitted_from_id",
            "created_by_id", "created_at", "started_at", "finished_at")),
        "endpoints": Listing("endpoints", Endpoint, (
            "id", "team_id", "cluster_id", "cluster__name", "name", "namespace", "kind", "engine", "image",
            "command", "model_source", "model", "served_model_name", "instance_group", "instance_type", "gpus",
            "tensor_parallel", "pipeline_parallel", "replicas", "ready_replicas", "port", "exposure", "autoscaling",
            "router", "pool_id", "pool__name", "state", "status_reason", "hostname", "operation_id",
            "created_by_id", "created_at", "updated_at", "deleted_at"),
            lambda rows: rows.exclude(state=EndpointState.DELETED)),
        "audit-events": Listing("audit-events", AuditEvent, (
            "id", "created_at", "actor_id", "actor_name", "team_id", "team_name", "source", "request_id", "action",
            "target_type", "target_id", "target_repr", "before", "after")),
    }


# the baseline ------------------------------------------------------------------------------------------------------


def bare_list(request, name: str):
    """The baseline: the product's token lookup and team narrowing, then ``.values()`` of the page and
    ``JsonResponse``; no DRF, no serializer."""
    from django.core.serializers.json import DjangoJSONEncoder
    from django.http import JsonResponse

    from accounts import access
    from accounts.authentication import user_for_secret
    from operations.models import OperationPhase

    listing = listings()[name]
    user = user_for_secret(request.headers["Authorization"].partition(" ")[2])
    size = int(request.GET.get("page_size", "50"))
    rows = listing.narrow(access.visible(user, listing.model)).order_by("-created_at", "-id")
    page = list(rows.values(*listing.columns)[:size + 1])[:size]
    if name == "operations":
        phases: dict[int, list[dict[str, Any]]] = {row["id"]: [] for row in page}
        for phase in OperationPhase.objects.filter(operation_id__in=list(phases)).order_by(
                "operation_id", "index").values(*PHASE_COLUMNS):
            phases[phase["operation_id"]].append(phase)
        for row in page:
            row["phases"] = phases[row["id"]]
    return JsonResponse({"next": None, "previous": None, "results": page}, encoder=DjangoJSONEncoder)


# the world ---------------------------------------------------------------------------------------------------------


def seed(rows: int) -> str:
    """One team, its admin with a token, and ``rows`` rows of every listed kind; returns the token's secret."""
    from django.db import transaction
    from django.utils import timezone

    from accounts import services as account_services
    from accounts.models import AuditEvent, Membership, Role, Team, User
    from clusters.models import Cluster, ClusterState
    from inference.models import Endpoint, EndpointState
    from operations.models import Operation, OperationPhase, OperationState, PhaseState
    from training.models import JobState, TrainingJob, TrainingPath

    now = timezone.now()
    with transaction.atomic():
        user = User.objects.create_user("bench", "bench@example.com", "a long bench password")
        team = Team.objects.create(name="Bench team", slug="bench", created_by=user)
        Membership.objects.create(team=team, user=user, role=Role.ADMIN)
        secret = account_services.token_create(actor=user, name="bench", source="system").secret
        clusters = Cluster.objects.bulk_create(Cluster(
            team=team, name=f"cluster-{i:05d}", region="us-west-2", state=ClusterState.ACTIVE, created_by=user,
            spec={"kubernetes_version": "1.31", "zones": ["us-west-2a", "us-west-2b"], "node_recovery": "Automatic",
                  "groups": [{"name": "workers", "instance_type": "ml.g5.8xlarge", "count": 2, "zone": "us-west-2a"}],
                  "system_nodes": {"instance_type": "m5.large", "count": 2}},
            eks_name=f"cluster-{i:05d}", eks_arn=f"arn:aws:eks:us-west-2:123456789012:cluster/cluster-{i:05d}",
            eks_status="ACTIVE", kubernetes_version="1.31",
            eks_endpoint=f"https://{i:032X}.gr7.us-west-2.eks.amazonaws.com",
            oidc_issuer=f"https://oidc.eks.us-west-2.amazonaws.com/id/{i:032X}", hyperpod_name=f"cluster-{i:05d}",
            hyperpod_arn=f"arn:aws:sagemaker:us-west-2:123456789012:cluster/{i:012x}", hyperpod_status="InService",
            node_recovery="Automatic", node_count=2, gpu_count=2, tags={"team": "bench", "cost-center": "ml"},
            refreshed_at=now) for i in range(rows))
        operations = Operation.objects.bulk_create(Operation(
            team=team, created_by=user, source="api", kind="demo.environment", title=f"Demo environment demo-{i}",
            target_type="cluster", target_id=str(clusters[i].pk), params={"name": f"demo-{i}", "region": "us-west-2"},
            outputs={"bucket": f"demo-{i}-bucket", "cluster_arn": clusters[i].eks_arn},
            state=OperationState.SUCCEEDED, phase="addon", attempt=1, started_at=now, finished_at=now,
            next_poll_at=now, deadline_at=now + timedelta(hours=2)) for i in range(rows))
        OperationPhase.objects.bulk_create(OperationPhase(
            operation=operation, index=index, slug=slug, title=slug.title(), state=PhaseState.SUCCEEDED,
            step="poll", attempts=1, polls=3, reference={"name": f"{slug}-{operation.pk}"}, started_at=now,
            finished_at=now, deadline_at=now + timedelta(hours=1))
            for operation in operations for index, slug in enumerate(PHASES))
        TrainingJob.objects.bulk_create(TrainingJob(
            team=team, cluster=clusters[i], created_by=user, operation=operations[i], name=f"llama-{i}",
            namespace="team-bench", recipe="pytorch", path=TrainingPath.HYPERPOD, state=JobState.RUNNING,
            instance_group="workers", instance_type="ml.g5.8xlarge", replicas=2, processes_per_node=1,
            restarts_total=3, metrics={"step": 120, "loss": 1.25, "tokens_per_second": 5120.5}, last_seq=400,
            started_at=now) for i in range(rows))
        Endpoint.objects.bulk_create(Endpoint(
            team=team, cluster=clusters[i], created_by=user, operation=operations[i], name=f"qwen-{i}",
            namespace="team-bench", engine="vllm", image="vllm/vllm-openai:v0.8.5",
            command=["vllm", "serve", "/mnt/shared/models/qwen", "--port", "8000", "--tensor-parallel-size", "1"],
            model_source="shared", model="models/qwen", served_model_name=f"qwen-{i}", instance_group="workers",
            instance_type="ml.g5.8xlarge", gpus=1, port=8000, state=EndpointState.READY, ready_replicas=1)
            for i in range(rows))
        AuditEvent.objects.bulk_create(AuditEvent(
            actor=user, actor_name=user.username, team=team, team_name=team.name, source="api",
            request_id=f"{i:032x}", action="cluster.create", target_type="cluster", target_id=str(clusters[i].pk),
            target_repr=clusters[i].name, after={"name": clusters[i].name, "region": "us-west-2"})
            for i in range(rows))
    return secret


# the measurement ---------------------------------------------------------------------------------------------------


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def queries(client, url: str, headers: dict[str, str]) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        client.get(url, headers=headers)
    return len(captured)


def measure(name: str, client, headers: dict[str, str], args: argparse.Namespace) -> list[str]:
    """One list: the product and its baseline, alternately; the row's cells."""
    product_url = f"/api/v1/{listings()[name].path}?page_size={args.page_size}"
    baseline_url = f"/bench/{name}?page_size={args.page_size}"
    product, baseline = client.get(product_url, headers=headers), client.get(baseline_url, headers=headers)
    for response in (product, baseline):
        if response.status_code != 200:
            raise RuntimeError(f"{response.request['PATH_INFO']} answered {response.status_code}: "
                               f"{response.content[:300]!r}")
    shown = [row["id"] for row in product.json()["results"]]
    if shown != [row["id"] for row in baseline.json()["results"]] or len(shown) != args.page_size:
        raise RuntimeError(f"the product and the baseline show different rows ({len(shown)} by the product)")
    counts = f"{queries(client, product_url, headers)}/{queries(client, baseline_url, headers)}"
    timings: dict[str, list[float]] = {"product": [], "baseline": []}
    for index in range(args.warmup + args.requests):
        for variant, url in (("product", product_url), ("baseline", baseline_url)):
            started = time.perf_counter()
            client.get(url, headers=headers)
            if index >= args.warmup:
                timings[variant].append(1000 * (time.perf_counter() - started))
    p50 = {variant: statistics.median(samples) for variant, samples in timings.items()}
    p95 = {variant: percentile(samples, 0.95) for variant, samples in timings.items()}
    return [name, str(len(shown)), f"{p50['product']:.1f}", f"{p95['product']:.1f}", f"{p50['baseline']:.1f}",
            f"{p95['baseline']:.1f}", f"{p50['product'] / p50['baseline']:.2f}×",
            f"{p95['product'] / p95['baseline']:.2f}×", counts]


def profile(name: str, client, headers: dict[str, str], args: argparse.Namespace) -> None:
    """Where the product's requests of one list spend their time: cProfile of ``--requests`` of them, the functions
    that take the most time of their own."""
    import cProfile
    import pstats

    url = f"/api/v1/{listings()[name].path}?page_size={args.page_size}"
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(args.requests):
        client.get(url, headers=headers)
    profiler.disable()
    print(f"\n{name}: {args.requests} product requests under cProfile", flush=True)
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(args.profile_lines)


def width(column: str) -> int:
    return max(len(column), 13 if column == "list" else 8)


def row(values: list[str]) -> str:
    cells = (f"{value:<{width(column)}}" for value, column in zip(values, COLUMNS, strict=True))
    return "| " + " | ".join(cells) + " |"


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.rest_lists_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=1000, help="rows of each kind, one team (1000)")
    parser.add_argument("--page-size", type=int, default=100, help="?page_size= of every request (100)")
    parser.add_argument("--requests", type=int, default=200, help="timed requests of each variant per list (200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests of each variant first (20)")
    parser.add_argument("--only", action="append", default=[], metavar="LIST",
                        help="measure only this list (repeatable): operations, clusters, training-jobs, endpoints, "
                             "audit-events")
    parser.add_argument("--profile", action="store_true",
                        help="after each list's row, profile its product requests (cProfile, by own time)")
    parser.add_argument("--profile-lines", type=int, default=30, help="functions shown per profile (30)")
    parser.add_argument("--database-url", default=os.environ.get(
        "INSTANTSTART_BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/instantstart_bench_lists"),
        help="PostgreSQL database to DROP, create and use ($INSTANTSTART_BENCH_DATABASE_URL)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    print(f"load average (1, 5, 15 min) at start: {load()}; {os.cpu_count()} CPUs", flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="instantstart-lists-bench-"))
    from config.embedded import redis_url, start_redis

    redis = start_redis(workdir, persist=False)
    (workdir / "var" / "staticfiles").mkdir(parents=True)  # WhiteNoise's root: it warns when there is none
    try:
        print(f"preparing {args.database_url} …", flush=True)
        ob.fresh_database(args.database_url)
        os.environ |= {
            "DATABASE_URL": args.database_url, "REDIS_URL": redis_url(workdir),
            "INSTANTSTART_VAR_DIR": str(workdir / "var"), "DJANGO_SETTINGS_MODULE": "config.settings",
            "INSTANTSTART_LOG_LEVEL": "WARNING", "INSTANTSTART_THROTTLE_TOKEN": "1000000/min",
        }
        import django

        django.setup()
        from django.conf import settings
        from django.test import Client

        settings.ROOT_URLCONF = "bench.rest_lists_urls"
        started = time.perf_counter()
        secret = seed(args.rows)
        print(f"seeded {args.rows} rows of each kind (operations with {len(PHASES)} phases) in "
              f"{time.perf_counter() - started:.0f} s; {args.requests} timed requests per variant after "
              f"{args.warmup} untimed, page size {args.page_size}; times in ms\n", flush=True)
        import config.asgi  # noqa: F401  (the web process's start-up, its gc.freeze included)

        client = Client()
        headers = {"Authorization": f"Bearer {secret}"}
        print(row(list(COLUMNS)), flush=True)
        print("|" + "|".join("-" * (width(column) + 2) for column in COLUMNS) + "|", flush=True)
        for name in args.only or listings():
            try:
                print(row(measure(name, client, headers, args)), flush=True)
                if args.profile:
                    profile(name, client, headers, args)
            except Exception as exc:  # the run goes on: a failed row says why
                traceback.print_exc()
                print(row([name, f"failed: {type(exc).__name__}: {exc}"] + [""] * (len(COLUMNS) - 2)), flush=True)
        print(f"\nload average (1, 5, 15 min) at end: {load()}", flush=True)
        return 0
    finally:
        redis.terminate()
        redis.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
