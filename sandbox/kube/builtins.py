"""The built-in kinds every virtual API server serves, with the scope, short names and subresources that
a Kubernetes 1.3x apiserver advertises, and the client model each is validated against."""

from __future__ import annotations

from sandbox.kube.resources import ResourceType

STATUS = frozenset({"status"})
STATUS_SCALE = frozenset({"status", "scale"})


def _t(group: str, version: str, kind: str, plural: str, namespaced: bool, model: str, *,
       short: tuple[str, ...] = (), subresources: frozenset[str] = frozenset(), name_rule: str = "subdomain",
       categories: tuple[str, ...] = ()) -> ResourceType:
    return ResourceType(group=group, version=version, kind=kind, plural=plural, namespaced=namespaced,
                        short_names=short, subresources=subresources, name_rule=name_rule, model=model,
                        categories=categories)


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _t("", "v1", "Namespace", "namespaces", False, "V1Namespace", short=("ns",), subresources=STATUS,
       name_rule="label"),
    _t("", "v1", "Pod", "pods", True, "V1Pod", short=("po",), subresources=frozenset({"status", "log"}),
       categories=("all",)),
    _t("", "v1", "Service", "services", True, "V1Service", short=("svc",), subresources=STATUS, name_rule="dns1035",
       categories=("all",)),
    _t("", "v1", "ConfigMap", "configmaps", True, "V1ConfigMap", short=("cm",)),
    _t("", "v1", "Secret", "secrets", True, "V1Secret"),
    _t("", "v1", "ServiceAccount", "serviceaccounts", True, "V1ServiceAccount", short=("sa",)),
    _t("", "v1", "Node", "nodes", False, "V1Node", short=("no",), subresources=STATUS),
    _t("", "v1", "PersistentVolume", "persistentvolumes", False, "V1PersistentVolume", short=("pv",),
       subresources=STATUS),
    _t("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, "V1PersistentVolumeClaim",
       short=("pvc",), subresources=STATUS),
    _t("", "v1", "Event", "events", True, "CoreV1Event", short=("ev",), name_rule="segment"),
    _t("", "v1", "Endpoints", "endpoints", True, "V1Endpoints", short=("ep",)),
    _t("apps", "v1", "Deployment", "deployments", True, "V1Deployment", short=("deploy",),
       subresources=STATUS_SCALE, categories=("all",)),
    _t("apps", "v1", "StatefulSet", "statefulsets", True, "V1StatefulSet", short=("sts",),
       subresources=STATUS_SCALE, categories=("all",)),
    _t("apps", "v1", "DaemonSet", "daemonsets", True, "V1DaemonSet", short=("ds",), subresources=STATUS,
       categories=("all",)),
    _t("apps", "v1", "ReplicaSet", "replicasets", True, "V1ReplicaSet", short=("rs",), subresources=STATUS_SCALE,
       categories=("all",)),
    _t("batch", "v1", "Job", "jobs", True, "V1Job", subresources=STATUS, categories=("all",)),
    _t("batch", "v1", "CronJob", "cronjobs", True, "V1CronJob", short=("cj",), subresources=STATUS,
       categories=("all",)),
    _t("rbac.authorization.k8s.io", "v1", "Role", "roles", True, "V1Role", name_rule="segment"),
    _t("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True, "V1RoleBinding", name_rule="segment"),
    _t("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False, "V1ClusterRole",
       name_rule="segment"),
    _t("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False,
       "V1ClusterRoleBinding", name_rule="segment"),
    _t("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, "V1StorageClass", short=("sc",)),
    _t("storage.k8s.io", "v1", "CSIDriver", "csidrivers", False, "V1CSIDriver"),
    _t("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", False,
       "V1CustomResourceDefinition", short=("crd", "crds"), subresources=STATUS),
    _t("coordination.k8s.io", "v1", "Lease", "leases", True, "V1Lease"),
    _t("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, "V1PodDisruptionBudget",
       short=("pdb",), subresources=STATUS),
    _t("autoscaling", "v2", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True,
       "V2HorizontalPodAutoscaler", short=("hpa",), subresources=STATUS, categories=("all",)),
    _t("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, "V1NetworkPolicy", short=("netpol",)),
    _t("apiregistration.k8s.io", "v1", "APIService", "apiservices", False, "V1APIService", subresources=STATUS),
)

#: Namespaces every EKS cluster starts with; the first three cannot be deleted.
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
PROTECTED_NAMESPACES = frozenset(DEFAULT_NAMESPACES[:3])
#: What every active namespace holds (the controllers re-create them when deleted): the ``default``
#: ServiceAccount and the cluster CA bundle ``kube-root-ca.crt``.
NAMESPACE_DEFAULTS = frozenset({("serviceaccounts", "default"), ("configmaps", "kube-root-ca.crt")})

#: Kinds whose DELETE answers with the object itself rather than a ``Status``.
RETURNS_DELETED_OBJECT = frozenset({"pods", "namespaces", "services", "customresourcedefinitions"})
