"""CEL rules (``x-kubernetes-validations``) of the real CRDs, evaluated on create, update and patch and refused
with the apiserver's 422 — through the official client."""

from __future__ import annotations

import json

import pytest
from kubernetes import client as k8s

from sandbox.kube import celrules, crds, world
from sandbox.kube.errors import ApiError
from tests.sandbox.kube.conftest import raw


def status(error: k8s.ApiException) -> dict:
    return json.loads(error.body)


def nodepool(name: str = "gpu", **spec) -> dict:
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"template": {"spec": {
                "nodeClassRef": {"group": "karpenter.sagemaker.amazonaws.com", "kind": "HyperpodNodeClass",
                                 "name": "gpu"},
                "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In",
                                  "values": ["ml.g5.xlarge"]}]}}, **spec}}


@pytest.fixture
def karpenter(store):
    world.install_crds(store, [crds.HYPERPOD_AUTOSCALING])
    return store


def test_a_rule_that_fails_on_create_is_422_with_its_message_and_field(api, karpenter):
    custom = k8s.CustomObjectsApi(api)
    body = nodepool()
    body["spec"]["template"]["spec"]["requirements"][0]["values"] = []
    with pytest.raises(k8s.ApiException) as refused:
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", body)
    answer = status(refused.value)
    assert refused.value.status == 422 and answer["reason"] == "Invalid"
    assert answer["message"] == ('NodePool.karpenter.sh "gpu" is invalid: spec.template.spec.requirements: Invalid '
                                 "value: \"array\": requirements with operator 'In' must have a value defined")
    assert answer["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.template.spec.requirements",
        "message": "Invalid value: \"array\": requirements with operator 'In' must have a value defined"}]

    labelled = nodepool()
    labelled["spec"]["template"]["metadata"] = {"labels": {"team.karpenter.sh/x": "a", "kubernetes.io/hostname": "h"}}
    with pytest.raises(k8s.ApiException) as restricted:
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", labelled)
    messages = [cause["message"] for cause in status(restricted.value)["details"]["causes"]]
    assert messages == ['Invalid value: "object": label domain "karpenter.sh" is restricted',  # the regex `find`
                        'Invalid value: "object": label "kubernetes.io/hostname" is restricted']

    created = custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", nodepool())
    assert created["metadata"]["name"] == "gpu"


def test_transition_rules_see_old_self_on_update_and_patch(api, karpenter):
    custom = k8s.CustomObjectsApi(api)
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodepools", nodepool())
    with pytest.raises(k8s.ApiException) as static:  # has(self.replicas) == has(oldSelf.replicas)
        custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", "gpu", {"spec": {"replicas": 2}})
    assert status(static.value)["details"]["causes"][0] == {
        "reason": "FieldValueInvalid", "field": "spec",
        "message": 'Invalid value: "object": Cannot transition NodePool between static (replicas set) and dynamic '
                   "(replicas unset) provisioning modes"}
    current = custom.get_cluster_custom_object("karpenter.sh", "v1", "nodepools", "gpu")
    current["spec"]["template"]["spec"]["nodeClassRef"]["kind"] = "Other"
    with pytest.raises(k8s.ApiException) as immutable:
        custom.replace_cluster_custom_object("karpenter.sh", "v1", "nodepools", "gpu", current)
    assert status(immutable.value)["details"]["causes"][0]["message"] == \
        'Invalid value: "object": nodeClassRef.kind is immutable'
    patched = custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodepools", "gpu",
                                                 {"spec": {"weight": 10}})
    assert patched["spec"]["weight"] == 10


def test_a_claim_spec_is_immutable_and_an_evaluation_error_is_reported(api, karpenter):
    custom = k8s.CustomObjectsApi(api)
    claim = {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c"},
             "spec": {"nodeClassRef": {"group": "karpenter.sagemaker.amazonaws.com", "kind": "HyperpodNodeClass",
                                       "name": "gpu"},
                      "requirements": [{"key": "karpenter.sh/capacity-type", "operator": "In",
                                        "values": ["on-demand"]}]}}
    custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", claim)
    with pytest.raises(k8s.ApiException) as refused:
        custom.patch_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", "c",
                                           {"spec": {"expireAfter": "1h"}})
    assert status(refused.value)["details"]["causes"][0]["message"] == 'Invalid value: "object": spec is immutable'
    with pytest.raises(k8s.ApiException) as bad_number:  # int(x.values[0]) on a value that is not a number
        custom.create_cluster_custom_object("karpenter.sh", "v1", "nodeclaims", {**claim, "metadata": {"name": "d"},
            "spec": {**claim["spec"], "requirements": [{"key": "cpu", "operator": "Gt", "values": ["x"]}]}})
    message = status(bad_number.value)["details"]["causes"][0]["message"]
    assert message.startswith('Invalid value: "array": ') and "evaluating rule: requirements operator 'Gt'" in message


def test_root_rules_and_status_writes_on_kueue_workloads(api, store):
    world.install_crds(store, ["kueue"])
    custom = k8s.CustomObjectsApi(api)
    workload = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"},
                "spec": {"podSets": [{"name": "main", "count": 1, "minCount": 2, "template": {"spec": {
                    "containers": [{"name": "c", "image": "busybox"}]}}}]}}
    with pytest.raises(k8s.ApiException) as refused:
        custom.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta1", "default", "workloads", workload)
    assert status(refused.value)["details"]["causes"][0] == {
        "reason": "FieldValueInvalid", "field": "spec.podSets[0]",
        "message": 'Invalid value: "object": minCount should be positive and less or equal to count'}
    workload["spec"]["podSets"][0]["minCount"] = 1
    custom.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta1", "default", "workloads", workload)
    admitted = {"status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "R", "message": "",
                                           "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                           "admission": {"clusterQueue": "q", "podSetAssignments": []}}}
    code, answer = raw(api, "PATCH", "/apis/kueue.x-k8s.io/v1beta1/namespaces/default/workloads/w/status", admitted,
                       "application/merge-patch+json")
    assert code == 422 and answer["details"]["causes"][0]["field"] == "<nil>"
    assert answer["message"].endswith("<nil>: Invalid value: \"object\": podSetAssignments must have the same "
                                      "number of podSets as the spec")


def test_a_crd_whose_rule_does_not_compile_is_refused(api):
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gadgets.example.com"},
           "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Gadget", "plural": "gadgets"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "x-kubernetes-validations": [{"rule": "self.spec.size >"}]}}}]}}
    with pytest.raises(k8s.ApiException) as refused:
        k8s.ApiextensionsV1Api(api).create_custom_resource_definition(crd)
    cause = status(refused.value)["details"]["causes"][0]
    assert refused.value.status == 422
    assert cause["field"] == "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule"
    assert "compilation failed" in cause["message"]


def test_unchanged_values_are_ratcheted_and_rules_stay_cheap(store, karpenter):
    """A value stored before a stricter rule existed can stay while other fields change (CRD validation
    ratcheting); changing it is checked. Rules are compiled once per text: patches compile nothing new."""
    gadgets = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": "gadgets.example.com"},
               "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Gadget", "plural": "gadgets"},
                        "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                            "type": "object", "properties": {"spec": {"type": "object", "properties": {
                                "size": {"type": "integer"}, "label": {"type": "string"}}}}}}}]}}
    store.create("customresourcedefinitions", gadgets)
    store.create("gadgets.example.com", {"metadata": {"name": "g"}, "spec": {"size": 50, "label": "a"}})
    crd = store.get("customresourcedefinitions", "gadgets.example.com")
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["size"][
        "x-kubernetes-validations"] = [{"rule": "self <= 10", "message": "at most 10"}]
    store.update("customresourcedefinitions", crd)
    assert store.patch("gadgets.example.com", "g", {"spec": {"label": "b"}})["spec"] == {"size": 50, "label": "b"}
    with pytest.raises(ApiError) as refused:
        store.patch("gadgets.example.com", "g", {"spec": {"size": 40}})
    assert str(refused.value) == 'Gadget.example.com "g" is invalid: spec.size: Invalid value: "integer": at most 10'

    karpenter.create("nodepools.karpenter.sh", nodepool())
    karpenter.patch("nodepools.karpenter.sh", "gpu", {"spec": {"weight": 1}})
    compiled = celrules.compile_rule.cache_info().misses
    for weight in range(2, 52):
        karpenter.patch("nodepools.karpenter.sh", "gpu", {"spec": {"weight": weight}})
    assert celrules.compile_rule.cache_info().misses == compiled
