"""The real CRDs the emulator validates against, and which add-on or operator installs which.

Location: ``$INSTANTSTART_CRDS_DIR`` when set, else ``sandbox/kube/crd_files/`` — the project's own copy of the
reference CRDs (byte for byte, with their README naming source repository, commit and licence), so a fresh
clone runs the sandbox with nothing beside it. Files are read once and parsed with libyaml; callers get copies.

HyperPodPyTorchJob has no published CRD. ``hyperpod_pytorch_job_crd()`` builds one from
``sagemaker.amazonaws.com/hyperpodpytorchjobs.derived-schema.json`` (JSON Schema from the hyp SDK's
pydantic models): ``$ref``s are inlined, ``anyOf [X, null]`` becomes ``nullable``, integer-or-string
unions become ``x-kubernetes-int-or-string``, ``additionalProperties: false`` becomes pruning, pydantic
defaults are dropped, and — as the README advises — ``replicaSpecs[].template`` is replaced by the core
``PodTemplateSpec`` schema generated from the client's models.

HyperpodNodeClass has no published CRD either: ``HYPERPOD_NODE_CLASS`` is the one authored from the documented
shape in ``sandbox/kube/authored_crds/`` (kept apart from the copies; its README says so).

``ADDON_CRDS`` maps EKS add-on names to the CRDs they install; ``OPERATOR_CRDS`` lists the CRDs of operators
the product installs itself (KubeRay, KEDA with its kustomize patches applied, Kueue, Karpenter), for
tests and the simulator; ``HYPERPOD_AUTOSCALING`` names what HyperPod installs on its EKS cluster when the
HyperPod cluster's Karpenter autoscaling is on (NodePool, NodeClaim, HyperpodNodeClass).
"""

from __future__ import annotations

import copy
import functools
import json
import os
from pathlib import Path
from typing import Any

import yaml

from sandbox.kube.modelschema import model_schema
from sandbox.kube.patch import json_patch

ENV_VAR = "INSTANTSTART_CRDS_DIR"
HYPERPOD_PYTORCH_JOB = "sagemaker.amazonaws.com/hyperpodpytorchjobs"
HYPERPOD_NODE_CLASS = "karpenter.sagemaker.amazonaws.com/hyperpodnodeclasses"
_VENDORED = Path(__file__).resolve().parent / "crd_files"
_AUTHORED = Path(__file__).resolve().parent / "authored_crds"

_INFERENCE = tuple(f"inference.sagemaker.aws.amazon.com/{name}.yaml"
                   for name in ("inferenceendpointconfigs", "jumpstartmodels", "sagemakerendpointregistrations"))
_KUEUE = tuple(f"kueue.x-k8s.io/{name}.yaml"
               for name in ("clusterqueues", "localqueues", "workloads", "resourceflavors", "workloadpriorityclasses"))

#: EKS add-on name → CRD files it installs (``HYPERPOD_PYTORCH_JOB`` stands for the derived CRD).
ADDON_CRDS: dict[str, tuple[str, ...]] = {
    "amazon-sagemaker-hyperpod-training-operator": (HYPERPOD_PYTORCH_JOB,),
    "amazon-sagemaker-hyperpod-inference": _INFERENCE,
    "amazon-sagemaker-hyperpod-taskgovernance": _KUEUE,
}

#: Operators the product installs as manifests → their CRD files.
OPERATOR_CRDS: dict[str, tuple[str, ...]] = {
    "kuberay": tuple(f"ray.io/{name}.yaml" for name in ("rayclusters", "rayjobs", "rayservices", "raycronjobs")),
    "keda": tuple(f"keda.sh/{name}.yaml" for name in ("scaledobjects", "scaledjobs", "triggerauthentications",
                                                       "clustertriggerauthentications")),
    "kueue": _KUEUE,
    "karpenter": ("karpenter.sh/nodepools.yaml", "karpenter.sh/nodeclaims.yaml"),
}

#: HyperPod-managed Karpenter → the CRDs HyperPod installs for it.
HYPERPOD_AUTOSCALING = "hyperpod-autoscaling"
_MANAGED_CRDS: dict[str, tuple[str, ...]] = {
    HYPERPOD_AUTOSCALING: (*OPERATOR_CRDS["karpenter"], HYPERPOD_NODE_CLASS),
}

_KEDA_PATCHES = {"keda.sh/scaledobjects.yaml": "keda.sh/kustomize-patches/scaledobject_patch.yaml",
                 "keda.sh/scaledjobs.yaml": "keda.sh/kustomize-patches/scaledjob_patch.yaml"}


def crds_dir() -> Path:
    """The folder holding the reference CRDs (see the module docstring)."""
    configured = os.environ.get(ENV_VAR)
    if configured:
        if not Path(configured).is_dir():
            raise FileNotFoundError(f"{ENV_VAR}={configured} is not a directory")
        return Path(configured)
    return _VENDORED


def parse_yaml(text: str | bytes) -> Any:
    """YAML as the apiserver reads it: plain JSON values (an unquoted ``2026-01-01`` stays a string)."""
    return json.loads(json.dumps(yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)), default=str))


@functools.cache
def _parsed(path: str) -> Any:
    text = (crds_dir() / path).read_text()
    return json.loads(text) if path.endswith(".json") else parse_yaml(text)


@functools.cache
def _authored(filename: str) -> Any:
    return parse_yaml((_AUTHORED / filename).read_text())


def load(path: str) -> dict[str, Any]:
    """A copy of the CRD at ``path`` (relative to ``crds_dir()``); KEDA CRDs come with their release patches,
    ``HYPERPOD_PYTORCH_JOB`` is the derived CRD and ``HYPERPOD_NODE_CLASS`` the authored one."""
    if path == HYPERPOD_PYTORCH_JOB:
        return hyperpod_pytorch_job_crd()
    if path == HYPERPOD_NODE_CLASS:
        return copy.deepcopy(_authored("hyperpodnodeclasses.yaml"))
    crd = copy.deepcopy(_parsed(path))
    if path in _KEDA_PATCHES:
        crd = json_patch(crd, _parsed(_KEDA_PATCHES[path]))
    return crd


def _structural(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(node, dict):
        return {}
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        if name in seen:
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        merged = {**defs[name], **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(merged, defs, (*seen, name))
    out: dict[str, Any]
    if "anyOf" in node:
        branches = [branch for branch in node["anyOf"] if branch.get("type") != "null"]
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        if len(branches) == 1:
            out = _structural({**branches[0], **rest}, defs, seen)
        elif {branch.get("type") for branch in branches} == {"integer", "string"}:
            out = {"x-kubernetes-int-or-string": True, **_structural(rest, defs, seen)}
        else:
            out = {"x-kubernetes-preserve-unknown-fields": True}
        if len(branches) < len(node["anyOf"]):
            out["nullable"] = True
        return out
    out = {}
    for key, value in node.items():
        if key in ("title", "default", "$schema", "$comment", "$defs"):
            continue
        if key == "properties":
            out[key] = {name: _structural(sub, defs, seen) for name, sub in value.items()}
        elif key == "items":
            out[key] = _structural(value, defs, seen)
        elif key == "additionalProperties":
            if isinstance(value, dict):
                out[key] = _structural(value, defs, seen)
            elif value is True:
                out["x-kubernetes-preserve-unknown-fields"] = True
        elif key == "const":
            out["enum"] = [value]
        elif key in ("allOf", "oneOf"):
            out[key] = [_structural(sub, defs, seen) for sub in value]
        else:
            out[key] = copy.deepcopy(value)
    return out


@functools.cache
def _hyperpod_pytorch_job_schema() -> dict[str, Any]:
    derived = _parsed("sagemaker.amazonaws.com/hyperpodpytorchjobs.derived-schema.json")
    schema = _structural({k: v for k, v in derived.items() if k != "$defs"}, derived.get("$defs", {}), ())
    schema["properties"].update({"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                                 "metadata": {"type": "object"}})
    replica = schema["properties"]["spec"]["properties"]["replicaSpecs"]["items"]
    replica["properties"]["template"] = copy.deepcopy(model_schema("V1PodTemplateSpec"))
    return schema


def hyperpod_pytorch_job_crd() -> dict[str, Any]:
    """A CRD for ``hyperpodpytorchjobs.sagemaker.amazonaws.com`` built from the derived schema."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "hyperpodpytorchjobs.sagemaker.amazonaws.com",
                     "annotations": {"instantstart.sandbox/derived-from":
                                     "sagemaker.amazonaws.com/hyperpodpytorchjobs.derived-schema.json"}},
        "spec": {
            "group": "sagemaker.amazonaws.com", "scope": "Namespaced",
            "names": {"kind": "HyperPodPyTorchJob", "listKind": "HyperPodPyTorchJobList",
                      "plural": "hyperpodpytorchjobs", "singular": "hyperpodpytorchjob"},
            "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": copy.deepcopy(_hyperpod_pytorch_job_schema())}}],
        },
    }


def files_for(names: list[str] | tuple[str, ...] | set[str] | frozenset[str]) -> list[str]:
    """CRD files installed by the given add-ons, operators and ``HYPERPOD_AUTOSCALING`` (unknown names install
    nothing)."""
    files: list[str] = []
    for name in sorted(names):
        for path in ADDON_CRDS.get(name, ()) + OPERATOR_CRDS.get(name, ()) + _MANAGED_CRDS.get(name, ()):
            if path not in files:
                files.append(path)
    return files
