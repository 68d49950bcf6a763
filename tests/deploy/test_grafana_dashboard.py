"""deploy/grafana/instantstart.json queries only what /metrics exports: every metric name is a sample name of one of
the product's families (config.metrics, cloud.metrics) and every label it groups or filters by is one of that
family's labels (or one Prometheus adds)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import REGISTRY
from prometheus_client.metrics import MetricWrapperBase

import cloud.metrics
import config.metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "instantstart.json"
#: The sample names each family type is exposed as (Prometheus's text format; ``_created`` is not queried).
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_count", "_sum")}
#: Labels Prometheus attaches to every scraped sample (target labels), and a histogram bucket's bound.
SCRAPE_LABELS = {"job", "instance", "pod", "namespace"}


def families() -> dict[str, tuple[str, set[str]]]:
    """The product's families in the registry /metrics serves (``config.metrics`` and ``cloud.metrics`` define them;
    every module's would be here): name → (type, label names)."""
    assert config.metrics.HTTP_REQUESTS and cloud.metrics.CLOUD_CALLS  # both modules are imported, so registered
    labels = {collector.describe()[0].name: set(collector._labelnames)
              for collector in REGISTRY._collector_to_names if isinstance(collector, MetricWrapperBase)}
    return {family.name: (family.type, labels[family.name]) for family in REGISTRY.collect()
            if family.name.startswith("instantstart_")}


def exported() -> dict[str, set[str]]:
    """Each sample name /metrics serves → the labels it carries."""
    return {name + suffix: labels | ({"le"} if suffix == "_bucket" else set())
            for name, (kind, labels) in families().items() for suffix in SUFFIXES[kind]}


def queries(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["expr"]] if isinstance(node.get("expr"), str) else []
        definition = node.get("definition")
        return found + ([definition] if isinstance(definition, str) else []) + [
            query for value in node.values() for query in queries(value)]
    if isinstance(node, list):
        return [query for value in node for query in queries(value)]
    return []


def test_every_metric_and_label_the_dashboard_queries_is_exported():
    dashboard = json.loads(DASHBOARD.read_text())
    names = exported()
    found = queries(dashboard["panels"]) + queries(dashboard["templating"])
    assert len(found) >= 19
    for query in found:
        metrics = set(re.findall(r"\binstantstart_[a-z_]+\b", query))
        assert metrics, query
        assert metrics <= names.keys(), (query, metrics - names.keys())
        known = set.union(*(names[metric] for metric in metrics)) | SCRAPE_LABELS
        grouped = {label.strip() for clause in re.findall(r"\bby \(([^)]*)\)", query) for label in clause.split(",")}
        matched = set(re.findall(r"[{,]\s*([a-z_]+)\s*(?:=~|!=|!~|=)", query))
        listed = set(re.findall(r"label_values\([a-z_]+, ([a-z_]+)\)", query))
        assert grouped | matched | listed <= known, (query, (grouped | matched | listed) - known)


def test_the_dashboard_covers_every_family():
    queried = set(re.findall(r"\binstantstart_[a-z_]+\b", DASHBOARD.read_text()))
    assert {name for name in families() if not any(sample.startswith(name) for sample in queried)} == set()
