"""EKS authorization in the sandbox: tokens from ``cloud.kube.eks_token`` are verified (SigV4, this cluster's id)
and their principal gets exactly what its access entry and access policies give it, as on EKS."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from botocore.exceptions import ClientError
from kubernetes import client as k8s

from cloud import aws, kube
from tests.clusters.sandbox import role_for

REGION = "us-west-2"
POLICY = "arn:aws:eks::aws:cluster-access-policy/{}"
CONFIG_MAP = {"metadata": {"name": "settings"}, "data": {"a": "1"}}


@pytest.fixture(autouse=True)
def _empty_sandbox(sandbox) -> Iterator[None]:
    yield
    sandbox.control("POST", "reset")


def subnets() -> list[str]:
    ec2 = aws.client("ec2", region=REGION)
    vpc = ec2.create_vpc(CidrBlock="10.7.0.0/16")["Vpc"]["VpcId"]
    return [ec2.create_subnet(VpcId=vpc, CidrBlock=f"10.7.{index}.0/24", AvailabilityZone=f"{REGION}{zone}")
            ["Subnet"]["SubnetId"] for index, zone in enumerate("ab")]


def make_cluster(name: str, subnet_ids: list[str], mode: str = "API", *, creator_admin: bool = True) -> None:
    """An ACTIVE EKS cluster made with the environment's (default) credentials."""
    eks = aws.client("eks", region=REGION)
    eks.create_cluster(name=name, roleArn=role_for("auth-eks"), resourcesVpcConfig={"subnetIds": subnet_ids},
                       accessConfig={"authenticationMode": mode,
                                     "bootstrapClusterCreatorAdminPermissions": creator_admin})
    deadline = time.monotonic() + 20
    while eks.describe_cluster(name=name)["cluster"]["status"] != "ACTIVE":
        assert time.monotonic() < deadline
        time.sleep(0.05)


def iam_user(name: str) -> tuple[str, aws.Credentials]:
    iam = aws.client("iam", region=REGION)
    arn = iam.create_user(UserName=name)["User"]["Arn"]
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return arn, aws.Credentials(key["AccessKeyId"], key["SecretAccessKey"])


def role_session(name: str) -> tuple[str, aws.Credentials]:
    """A role and credentials of a session of it (``AssumeRole``): access entries name the role."""
    role = aws.client("iam", region=REGION).create_role(RoleName=name, AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                               "Principal": {"AWS": "arn:aws:iam::123456789012:root"}}]}))
    session = aws.client("sts", region=REGION).assume_role(RoleArn=role["Role"]["Arn"], RoleSessionName="alice")
    found = session["Credentials"]
    return role["Role"]["Arn"], aws.Credentials(found["AccessKeyId"], found["SecretAccessKey"], found["SessionToken"])


def grant(cluster: str, principal: str, policy: str, namespaces: list[str] | None = None) -> None:
    eks = aws.client("eks", region=REGION)
    eks.create_access_entry(clusterName=cluster, principalArn=principal)
    scope = {"type": "namespace", "namespaces": namespaces} if namespaces else {"type": "cluster"}
    eks.associate_access_policy(clusterName=cluster, principalArn=principal, policyArn=POLICY.format(policy),
                                accessScope=scope)


def core_api(cluster: str, credentials: aws.Credentials | None = None, token: str | None = None) -> k8s.CoreV1Api:
    """The product's client for ``cluster`` (``credentials`` sign its tokens), or one sending ``token``."""
    if token is None:
        return k8s.CoreV1Api(kube.api_client(cluster, region=REGION, credentials=credentials))
    where = kube.describe_access(cluster, region=REGION)
    configuration = k8s.Configuration(host=where.endpoint, api_key={"authorization": token},
                                      api_key_prefix={"authorization": "Bearer"})
    configuration.ssl_ca_cert = where.ca_file
    return k8s.CoreV1Api(k8s.ApiClient(configuration))


def refused(call, *args, **kwargs) -> tuple[int, dict]:
    with pytest.raises(k8s.ApiException) as raised:
        call(*args, **kwargs)
    return raised.value.status, json.loads(raised.value.body)


def test_tokens_need_an_access_entry_the_right_secret_and_this_clusters_id_and_policies_decide_the_rest():
    make_cluster("auth", subnets())
    core = core_api("auth")
    assert core.list_namespace().items  # the creator's bootstrap entry (AmazonEKSClusterAdminPolicy)
    core.create_namespace({"metadata": {"name": "team-a"}})

    stranger, stranger_credentials = iam_user("stranger")
    status, body = refused(core_api("auth", stranger_credentials).list_namespace)
    assert (status, body) == (401, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    admin = aws.Credentials("sandbox", "sandbox")
    other_cluster = kube.eks_token("elsewhere", region=REGION, credentials=admin).value
    wrong_secret = kube.eks_token("auth", region=REGION, credentials=aws.Credentials("sandbox", "guessed")).value
    for token in (other_cluster, wrong_secret):
        assert refused(core_api("auth", token=token).list_namespace)[0] == 401
    assert core_api("auth", token=kube.eks_token("auth", region=REGION, credentials=admin).value).list_namespace()

    role, session = role_session("viewer")
    grant("auth", role, "AmazonEKSViewPolicy")
    viewer = core_api("auth", session)
    assert {ns.metadata.name for ns in viewer.list_namespace().items} >= {"default", "kube-system", "team-a"}
    assert viewer.read_namespaced_config_map("kube-root-ca.crt", "default").data
    status, body = refused(viewer.create_namespaced_config_map, "default", CONFIG_MAP)
    assert (status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == ('configmaps is forbidden: User "arn:aws:sts::123456789012:assumed-role/viewer/alice" '
                               'cannot create resource "configmaps" in API group "" in the namespace "default"')
    for write in (lambda: viewer.patch_namespaced_config_map("kube-root-ca.crt", "default", {"data": {"x": "y"}}),
                  lambda: viewer.replace_namespace("default", viewer.read_namespace("default")),
                  lambda: viewer.delete_namespaced_config_map("kube-root-ca.crt", "default"),
                  lambda: viewer.list_namespaced_secret("default")):
        assert refused(write)[0] == 403

    grant("auth", stranger, "AmazonEKSEditPolicy", ["team-a"])
    editor = core_api("auth", stranger_credentials)
    assert editor.create_namespaced_config_map("team-a", CONFIG_MAP).metadata.name == "settings"
    assert editor.read_namespace("team-a").metadata.name == "team-a"
    for refusal in (lambda: editor.create_namespaced_config_map("default", CONFIG_MAP),
                    lambda: editor.list_namespace(), lambda: editor.list_node(),
                    lambda: editor.list_pod_for_all_namespaces(), lambda: editor.delete_namespace("team-a")):
        assert refused(refusal)[0] == 403


def test_the_creator_is_admin_only_with_bootstrap_permissions_and_aws_auth_maps_others_in_config_map_mode():
    subnet_ids = subnets()
    make_cluster("no-bootstrap", subnet_ids, creator_admin=False)
    make_cluster("legacy", subnet_ids, "CONFIG_MAP")
    with pytest.raises(ClientError, match="bootstrapClusterCreatorAdminPermissions must be true if cluster "
                                          "authentication mode is set to CONFIG_MAP"):
        make_cluster("locked-out", subnet_ids, "CONFIG_MAP", creator_admin=False)
    assert refused(core_api("no-bootstrap").list_namespace)[0] == 401
    grant("no-bootstrap", aws.principal_arn(region=REGION), "AmazonEKSClusterAdminPolicy")
    assert core_api("no-bootstrap").list_namespace().items

    user, credentials = iam_user("mapped")
    assert refused(core_api("legacy", credentials).list_namespace)[0] == 401
    core_api("legacy").create_namespaced_config_map("kube-system", {"metadata": {"name": "aws-auth"}, "data": {
        "mapUsers": f"- userarn: {user}\n  username: mapped\n  groups: [system:masters]\n"}})
    assert core_api("legacy", credentials).create_namespace({"metadata": {"name": "mapped"}}).metadata.name
