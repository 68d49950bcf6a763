"""EKS access policies and principal mapping (``sandbox.kube.access``), without a server: what each AWS-managed
policy allows, scopes, and how a verified credential becomes a Kubernetes user."""

from __future__ import annotations

import pytest

from sandbox.kube import access
from sandbox.kube.errors import ApiError

POLICY = "arn:aws:eks::aws:cluster-access-policy/{}"
ROLE = "arn:aws:iam::123456789012:role/team"
SESSION = access.Credential("ASIA1", "secret", "token", "arn:aws:sts::123456789012:assumed-role/team/bob", ROLE)


def user(policy: str, namespaces: tuple[str, ...] | None = None) -> access.User:
    return access.User("someone", policies=(access.Association(POLICY.format(policy), namespaces),))


def allowed(who: access.User, request: access.Request) -> bool:
    try:
        access.authorize(who, request)
    except ApiError as error:
        assert (error.code, error.reason) == (403, "Forbidden")
        return False
    return True


@pytest.mark.parametrize(("policy", "request_", "expected"), [
    ("AmazonEKSClusterAdminPolicy", access.Request("create", "apiextensions.k8s.io", "customresourcedefinitions"),
     True),
    ("AmazonEKSAdminPolicy", access.Request("create", "rbac.authorization.k8s.io", "rolebindings", namespace="a"),
     True),
    ("AmazonEKSAdminPolicy", access.Request("create", "", "namespaces"), False),
    ("AmazonEKSAdminPolicy", access.Request("create", "sagemaker.amazonaws.com", "hyperpodpytorchjobs",
                                            namespace="a"), False),
    ("AmazonEKSEditPolicy", access.Request("create", "", "pods", "eviction", "a", "p"), True),
    ("AmazonEKSEditPolicy", access.Request("create", "rbac.authorization.k8s.io", "roles", namespace="a"), False),
    ("AmazonEKSEditPolicy", access.Request("get", "", "secrets", namespace="a", name="s"), True),
    ("AmazonEKSViewPolicy", access.Request("get", "", "pods", "log", "a", "p"), True),
    ("AmazonEKSViewPolicy", access.Request("get", "", "secrets", namespace="a", name="s"), False),
    ("AmazonEKSViewPolicy", access.Request("update", "apps", "deployments", "scale", "a", "d"), False),
    ("AmazonEKSViewPolicy", access.Request("list", "", "nodes"), False),
    ("AmazonEKSAdminViewPolicy", access.Request("list", "", "secrets", namespace="a"), True),
    ("AmazonEKSAdminViewPolicy", access.Request("delete", "", "secrets", namespace="a", name="s"), False),
    ("AmazonEKSAutoNodePolicy", access.Request("get", "", "pods", namespace="a", name="p"), False),
])
def test_access_policies_follow_the_kubernetes_user_facing_roles(policy, request_, expected):
    assert allowed(user(policy), request_) is expected


def test_namespace_scopes_cover_their_namespaces_and_prefixes_only():
    scoped = user("AmazonEKSClusterAdminPolicy", ("team-a", "dev-*"))
    assert allowed(scoped, access.Request("delete", "", "pods", namespace="dev-42", name="p"))
    assert allowed(scoped, access.Request("get", "", "namespaces", namespace="team-a", name="team-a"))
    assert not allowed(scoped, access.Request("list", "", "pods", namespace="team-b"))
    assert not allowed(scoped, access.Request("list", "", "pods"))
    assert not allowed(scoped, access.Request("list", "", "nodes"))


def test_discovery_is_open_to_every_mapped_user_and_refusals_read_like_rbacs():
    nobody = access.User("arn:aws:iam::123456789012:user/x")
    assert allowed(nobody, access.Request("get"))
    assert allowed(nobody, access.Request("create", "authorization.k8s.io", "selfsubjectaccessreviews"))
    with pytest.raises(ApiError) as refused:
        access.authorize(nobody, access.Request("get", "apps", "deployments", "scale", "a", "web"))
    assert refused.value.message == ('deployments.apps "web" is forbidden: User "arn:aws:iam::123456789012:user/x" '
                                     'cannot get resource "deployments/scale" in API group "apps" in the namespace "a"')
    assert refused.value.details == {"name": "web", "group": "apps", "kind": "deployments"}


def test_principals_map_through_access_entries_or_config_map_as_the_mode_says():
    entry = access.Entry(ROLE, "arn:aws:sts::123456789012:assumed-role/team/{{SessionName}}", ("viewers",),
                         (access.Association(POLICY.format("AmazonEKSViewPolicy")),))
    aws_auth = {"data": {"mapRoles": f"- rolearn: {ROLE}\n  username: mapped\n  groups: [system:masters]\n"}}
    api = access.ClusterAccess("API", (entry,))
    assert access.user_of(SESSION, api, aws_auth) == access.User(
        "arn:aws:sts::123456789012:assumed-role/team/bob", ("viewers",), entry.policies)
    assert access.user_of(SESSION, access.ClusterAccess("API"), aws_auth) is None
    both = access.ClusterAccess("API_AND_CONFIG_MAP")
    assert access.user_of(SESSION, both, aws_auth) == access.User("mapped", ("system:masters",))
    assert access.user_of(SESSION, access.ClusterAccess("CONFIG_MAP", (entry,)), None) is None
    assert access.user_of(SESSION, access.ClusterAccess("CONFIG_MAP", creator_arn=ROLE), None) == access.User(
        "kubernetes-admin", ("system:masters",))


def test_kubernetes_groups_get_what_the_clusters_rbac_bindings_grant(store):
    rbac = "rbac.authorization.k8s.io"
    store.create("namespaces", {"metadata": {"name": "a"}})
    store.create(f"roles.{rbac}", {"metadata": {"name": "reader"}, "rules": [
        {"apiGroups": [""], "resources": ["pods", "pods/log"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["update"], "resourceNames": ["settings"]}]},
        namespace="a")
    store.create(f"rolebindings.{rbac}", {"metadata": {"name": "devs-read"}, "roleRef": {
        "apiGroup": rbac, "kind": "Role", "name": "reader"}, "subjects": [
        {"kind": "Group", "apiGroup": rbac, "name": "devs"}]}, namespace="a")
    store.create(f"clusterroles.{rbac}", {"metadata": {"name": "node-reader"}, "rules": [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]})
    store.create(f"clusterrolebindings.{rbac}", {"metadata": {"name": "dev-nodes"}, "roleRef": {
        "apiGroup": rbac, "kind": "ClusterRole", "name": "node-reader"}, "subjects": [
        {"kind": "User", "apiGroup": rbac, "name": "dev"}]})
    dev = access.User("dev", ("devs",))

    def may(request: access.Request, who: access.User = dev) -> bool:
        try:
            access.authorize(who, request, store)
        except ApiError:
            return False
        return True

    assert may(access.Request("get", "", "pods", "log", "a", "p"))
    assert may(access.Request("list", "", "nodes"))
    assert may(access.Request("update", "", "configmaps", namespace="a", name="settings"))
    assert not may(access.Request("update", "", "configmaps", namespace="a", name="other"))
    assert not may(access.Request("get", "", "pods", namespace="b", name="p"))
    assert not may(access.Request("delete", "", "pods", namespace="a", name="p"))
    assert not may(access.Request("list", "", "nodes"), access.User("someone-else", ("others",)))
