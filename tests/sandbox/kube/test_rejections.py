"""Inputs a real API server refuses are refused here too, never stored and never a 500."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.exceptions import ApiException


def deployment(operator: str) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": operator, "values": ["web"]}]},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
    }


def test_an_unknown_selector_operator_is_unsupported(api):
    from kubernetes import client as k8s

    apps = k8s.AppsV1Api(api)
    with pytest.raises(ApiException) as error:
        apps.create_namespaced_deployment("default", deployment("Bogus"))
    status = json.loads(error.value.body)
    assert (error.value.status, status["reason"]) == (422, "Invalid")
    assert status["details"]["causes"][0]["field"] == "spec.selector.matchExpressions[0].operator"
    assert apps.list_namespaced_deployment("default").items == []
    assert apps.create_namespaced_deployment("default", deployment("In")).metadata.name == "web"


def test_delete_preconditions_must_be_an_object(api, core):
    from kubernetes import client as k8s

    core.create_namespaced_config_map("default", k8s.V1ConfigMap(metadata=k8s.V1ObjectMeta(name="c")))
    response = api.call_api(
        "DELETE", f"{api.configuration.host}/api/v1/namespaces/default/configmaps/c", body={"preconditions": "x"},
        header_params={"Content-Type": "application/json",
                       "Authorization": api.configuration.get_api_key_with_prefix("authorization")})
    response.read()
    assert response.status == 400
    assert core.read_namespaced_config_map("c", "default").metadata.name == "c"


def test_node_ports_outside_the_default_range_are_invalid(core):
    from kubernetes import client as k8s

    def service(node_port: int):
        return k8s.V1Service(metadata=k8s.V1ObjectMeta(name=f"s{node_port}"), spec=k8s.V1ServiceSpec(
            type="NodePort", selector={"app": "web"},
            ports=[k8s.V1ServicePort(port=80, target_port=8080, node_port=node_port)]))

    with pytest.raises(ApiException) as error:
        core.create_namespaced_service("default", service(99999))
    assert json.loads(error.value.body)["details"]["causes"][0]["field"] == "spec.ports[0].nodePort"
    assert core.create_namespaced_service("default", service(30080)).spec.ports[0].node_port == 30080


def test_a_pod_of_a_missing_service_account_is_forbidden_until_it_exists(core):
    from kubernetes import client as k8s

    pod = k8s.V1Pod(metadata=k8s.V1ObjectMeta(name="p"), spec=k8s.V1PodSpec(
        service_account_name="runner", containers=[k8s.V1Container(name="c", image="busybox")]))
    with pytest.raises(ApiException) as error:
        core.create_namespaced_pod("default", pod)
    assert (error.value.status, json.loads(error.value.body)["message"]) == (
        403, 'pods "p" is forbidden: error looking up service account default/runner: serviceaccount "runner" not '
             "found")
    assert core.list_namespaced_pod("default").items == []
    core.create_namespaced_service_account("default", k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name="runner")))
    assert core.create_namespaced_pod("default", pod).spec.service_account_name == "runner"
