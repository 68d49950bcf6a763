"""NetworkPolicies (networking.k8s.io/v1): defaulted, validated and refused as the apiserver does, through the
official client's typed API."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException


def policy(**spec) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "web"},
            "spec": {"podSelector": {"matchLabels": {"app": "web"}}, **spec}}


@pytest.fixture
def networking(api) -> k8s.NetworkingV1Api:
    return k8s.NetworkingV1Api(api)


def test_policy_types_and_protocols_are_defaulted(networking):
    created = networking.create_namespaced_network_policy("default", policy(
        egress=[{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}], "ports": [{"port": 5432}]}]))
    assert created.spec.policy_types == ["Ingress", "Egress"]
    assert created.spec.egress[0].ports[0].protocol == "TCP"
    assert networking.list_namespaced_network_policy("default").items[0].metadata.name == "web"

    deny_in = networking.create_namespaced_network_policy("default", {**policy(), "metadata": {"name": "deny"}})
    assert deny_in.spec.policy_types == ["Ingress"]


@pytest.mark.parametrize(("spec", "field"), [
    ({"policyTypes": ["Ingress", "Sideways"]}, "spec.policyTypes[1]"),
    ({"ingress": [{"ports": [{"protocol": "ICMP", "port": 80}]}]}, "spec.ingress[0].ports[0].protocol"),
    ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/40"}}]}]}, "spec.egress[0].to[0].ipBlock.cidr"),
    ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["192.168.0.0/24"]}}]}]},
     "spec.egress[0].to[0].ipBlock.except[0]"),
    ({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/16"}, "namespaceSelector": {}}]}]},
     "spec.ingress[0].from[0]"),
])
def test_what_the_apiserver_refuses_is_refused(networking, spec, field):
    with pytest.raises(ApiException) as refused:
        networking.create_namespaced_network_policy("default", policy(**spec))
    status = json.loads(refused.value.body)
    assert (refused.value.status, status["reason"]) == (422, "Invalid")
    assert [cause["field"] for cause in status["details"]["causes"]] == [field]
    assert networking.list_namespaced_network_policy("default").items == []
