"""The eks and activate phases against the sandbox: the control plane to ACTIVE with its role, OIDC provider and the
control plane's own access entry; exactly-once creation across a failed call and a retry of the phase alone; a
name that is not ours; and a delete that removes only what carries our tags."""

from __future__ import annotations

import json
from collections import Counter

import boto3
import pytest

from clusters.models import ActiveCluster, Cluster
from clusters.ownership import as_tag_list, aws_tags, iam_name, owned_by
from clusters.phases import activate, eks, network
from operations import services
from operations.models import Operation, OperationPhase, OperationState, PhaseStep
from operations.pipeline import Pipeline, register
from tests.clusters.sandbox import role_for
from tests.sandbox.aws.helpers import default_subnets

pytestmark = pytest.mark.django_db(transaction=True)

CREATE_KIND = "test.clusters.network-eks"
DELETE_KIND = "test.clusters.eks-network-delete"
ACTIVATE_KIND = "test.clusters.activate"
register(Pipeline(kind=CREATE_KIND, phases=(network.CREATE, eks.CREATE, activate.CREATE)))
register(Pipeline(kind=DELETE_KIND, phases=(eks.DELETE, network.DELETE)))
register(Pipeline(kind=ACTIVATE_KIND, phases=(activate.CREATE,)))

CONTROL_PLANE = "arn:aws:iam::123456789012:user/moto"  # the sandbox's answer to GetCallerIdentity
ADMIN_POLICY = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
REGION = {"region_name": "us-west-2"}
EKS_TRUST = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                     "Principal": {"Service": "eks.amazonaws.com"}}]}


def start(cast, cluster: Cluster, kind: str, *, actor=...) -> Operation:
    operation, created = services.operation_start(
        actor=cast.admin if actor is ... else actor, team=cluster.team, kind=kind, title=f"{kind} {cluster.name}",
        params={"cluster_id": cluster.pk, **cluster.spec}, source="system", target=cluster)
    assert created
    return operation


def effects(sandbox, operation: str) -> int:
    return len(sandbox.control("GET", f"requests?operation={operation}&effective=1")["requests"])


def phases(operation: Operation) -> dict[str, OperationPhase]:
    return {phase.slug: phase for phase in operation.phases.order_by("index")}


def test_the_control_plane_becomes_active_with_its_role_oidc_provider_and_admin_access(sandbox, cast, make_cluster,
                                                                                       drive):
    cluster = make_cluster("alpha", kubernetes_version="1.32")
    operation = drive(start(cast, cluster, CREATE_KIND))

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    found = boto3.client("eks", **REGION).describe_cluster(name="alpha")["cluster"]
    assert found["status"] == "ACTIVE" and found["version"] == "1.32"
    assert owned_by(found["tags"], cluster)
    assert found["accessConfig"]["authenticationMode"] == "API"
    outputs = operation.outputs
    assert found["resourcesVpcConfig"]["subnetIds"] == [*outputs["private_subnet_ids"], *outputs["public_subnet_ids"]]
    assert found["resourcesVpcConfig"]["securityGroupIds"] == [outputs["security_group_id"]]

    cluster.refresh_from_db()
    assert (cluster.eks_name, cluster.eks_arn, cluster.eks_status, cluster.kubernetes_version) == (
        "alpha", found["arn"], "ACTIVE", "1.32")
    assert (cluster.eks_endpoint, cluster.oidc_issuer) == (found["endpoint"], found["identity"]["oidc"]["issuer"])

    iam = boto3.client("iam", **REGION)
    role_name = iam_name(cluster, "eks-cluster")
    role = iam.get_role(RoleName=role_name)["Role"]
    assert outputs["cluster_role_arn"] == role["Arn"] == found["roleArn"]
    assert owned_by(iam.list_role_tags(RoleName=role_name)["Tags"], cluster)
    assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "eks.amazonaws.com"}
    assert [p["PolicyName"] for p in iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]] == [
        "AmazonEKSClusterPolicy"]

    provider = iam.get_open_id_connect_provider(OpenIDConnectProviderArn=outputs["oidc_provider_arn"])
    assert "https://" + provider["Url"] == cluster.oidc_issuer == outputs["oidc_issuer"]
    assert provider["ClientIDList"] == ["sts.amazonaws.com"] and owned_by(provider["Tags"], cluster)

    policies = boto3.client("eks", **REGION).list_associated_access_policies(
        clusterName="alpha", principalArn=CONTROL_PLANE)["associatedAccessPolicies"]
    assert [(p["policyArn"], p["accessScope"]["type"]) for p in policies] == [(ADMIN_POLICY, "cluster")]
    assert (outputs["eks_name"], outputs["eks_arn"]) == ("alpha", found["arn"])

    assert ActiveCluster.objects.get(user=cast.admin, team=cast.team).cluster == cluster
    assert {name: effects(sandbox, name) for name in ("CreateRole", "CreateCluster", "CreateOpenIDConnectProvider",
                                                      "CreateAccessEntry", "AssociateAccessPolicy")} == {
        "CreateRole": 1, "CreateCluster": 1, "CreateOpenIDConnectProvider": 1, "CreateAccessEntry": 0,
        "AssociateAccessPolicy": 0}, "the creator's access entry EKS made is adopted"


def test_a_rerun_adopts_the_cluster_and_gives_the_control_plane_access_it_lacks(sandbox, cast, make_cluster, drive):
    """A worker dies after CreateCluster, before recording it, and meanwhile someone removed the creator's access
    entry: the re-run adopts the cluster, and the poll creates the entry and associates the admin policy."""
    cluster = make_cluster("alpha")
    operation = drive(start(cast, cluster, CREATE_KIND),
                      until=lambda op: op.phase == "eks" and phases(op)["eks"].step == PhaseStep.POLL)
    client = boto3.client("eks", **REGION)
    client.delete_access_entry(clusterName="alpha", principalArn=CONTROL_PLANE)
    OperationPhase.objects.filter(operation=operation, slug="eks").update(step=PhaseStep.SUBMIT)

    operation = drive(operation)

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    assert effects(sandbox, "CreateCluster") == 1 and effects(sandbox, "CreateRole") == 1
    assert effects(sandbox, "CreateOpenIDConnectProvider") == 1
    assert effects(sandbox, "CreateAccessEntry") == 1 and effects(sandbox, "AssociateAccessPolicy") == 1
    policies = client.list_associated_access_policies(clusterName="alpha",
                                                      principalArn=CONTROL_PLANE)["associatedAccessPolicies"]
    assert [p["policyArn"] for p in policies] == [ADMIN_POLICY]
    assert operation.logs.filter(phase="eks", message__contains="already exists; adopting it").exists()


def test_a_failed_create_cluster_is_retried_in_the_eks_phase_alone_and_creates_the_cluster_once(sandbox, cast,
                                                                                               make_cluster, drive):
    sandbox.control("POST", "faults", {"target": "eks:CreateCluster", "kind": "error", "count": 1,
                                       "code": "InvalidParameterException", "message": "refused by the test"})
    cluster = make_cluster("alpha")
    operation = drive(start(cast, cluster, CREATE_KIND))

    assert operation.state == OperationState.FAILED
    assert phases(operation)["eks"].state == "failed" and "refused by the test" in operation.error_message
    network_calls = Counter(entry["operation"] for entry in sandbox.control("GET", "requests")["requests"]
                            if entry["service"] == "ec2")

    services.operation_retry(actor=cast.admin, operation=operation, source="api")
    operation = drive(operation)

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    assert {slug: phase.attempts for slug, phase in phases(operation).items()} == {
        "network": 1, "eks": 2, "activate": 1}
    attempts = sandbox.control("GET", "requests?operation=CreateCluster")["requests"]
    assert [bool(entry["fault"]) for entry in attempts] == [True, False]
    assert attempts[0]["client_token"] == attempts[1]["client_token"], "the persisted token is reused"
    assert effects(sandbox, "CreateCluster") == 1 and effects(sandbox, "CreateRole") == 1
    assert effects(sandbox, "CreateVpc") == 1
    assert Counter(entry["operation"] for entry in sandbox.control("GET", "requests")["requests"]
                   if entry["service"] == "ec2") == network_calls, "the network phase sent nothing again"


def test_an_eks_cluster_of_that_name_that_is_not_ours_fails_the_phase(sandbox, cast, make_cluster, drive):
    client = boto3.client("eks", **REGION)
    client.create_cluster(name="alpha", roleArn=role_for("someone-else"),
                          resourcesVpcConfig={"subnetIds": default_subnets(boto3.client)},
                          tags={"owner": "someone-else"})
    cluster = make_cluster("alpha")

    operation = drive(start(cast, cluster, CREATE_KIND))

    assert operation.state == OperationState.FAILED
    assert operation.error_code == "cluster_name_taken"
    assert client.describe_cluster(name="alpha")["cluster"]["tags"] == {"owner": "someone-else"}
    assert effects(sandbox, "CreateCluster") == 1, "only the stranger's own"


def test_an_eks_cluster_that_fails_fails_the_phase(sandbox, cast, make_cluster, drive):
    sandbox.control("POST", "outcomes", {"resource": "eks-cluster", "name": "alpha", "outcome": "fail",
                                         "message": "subnets ran out of addresses", "count": 1})
    operation = drive(start(cast, make_cluster("alpha"), CREATE_KIND))

    assert operation.state == OperationState.FAILED
    assert operation.error_code == "eks_cluster_failed"
    assert operation.error_message == "EKS control plane: The EKS cluster alpha failed to create."
    assert phases(operation)["eks"].error_detail["status"] == "FAILED"
    assert Cluster.objects.get(name="alpha").eks_status == "FAILED"


def test_delete_removes_the_control_plane_oidc_provider_role_and_network(sandbox, cast, make_cluster, drive):
    iam = boto3.client("iam", **REGION)
    iam.create_role(RoleName="someone-elses-role", AssumeRolePolicyDocument=json.dumps(EKS_TRUST))
    foreign_vpc = boto3.client("ec2", **REGION).create_vpc(CidrBlock="10.0.0.0/16")["Vpc"]["VpcId"]
    cluster = make_cluster("alpha")
    created = drive(start(cast, cluster, CREATE_KIND))
    assert created.state == OperationState.SUCCEEDED, created.error_message

    deleted = drive(start(cast, cluster, DELETE_KIND))

    assert deleted.state == OperationState.SUCCEEDED, deleted.error_message
    assert boto3.client("eks", **REGION).list_clusters()["clusters"] == []
    assert iam.list_open_id_connect_providers()["OpenIDConnectProviderList"] == []
    assert [role["RoleName"] for role in iam.list_roles()["Roles"]] == ["someone-elses-role"]
    ec2 = boto3.client("ec2", **REGION)
    assert created.outputs["vpc_id"] not in {vpc["VpcId"] for vpc in ec2.describe_vpcs()["Vpcs"]}
    assert foreign_vpc in {vpc["VpcId"] for vpc in ec2.describe_vpcs()["Vpcs"]}
    cluster.refresh_from_db()
    assert cluster.eks_status == "DELETED"


def test_delete_leaves_an_eks_cluster_and_role_that_are_not_ours_alone(sandbox, cast, make_cluster, drive):
    """An imported cluster, say: its EKS cluster and a role of the name we would use carry none of our tags."""
    cluster = make_cluster("alpha", state="active")
    iam = boto3.client("iam", **REGION)
    role_name = iam_name(cluster, "eks-cluster")
    iam.create_role(RoleName=role_name, AssumeRolePolicyDocument=json.dumps(EKS_TRUST),
                    Tags=as_tag_list({"owner": "someone-else"}))
    client = boto3.client("eks", **REGION)
    client.create_cluster(name="alpha", roleArn=f"arn:aws:iam::123456789012:role/{role_name}",
                          resourcesVpcConfig={"subnetIds": default_subnets(boto3.client)},
                          tags={**aws_tags(cluster), "instantstart:cluster-id": "999999"})

    deleted = drive(start(cast, cluster, DELETE_KIND))

    assert deleted.state == OperationState.SUCCEEDED, deleted.error_message
    assert client.describe_cluster(name="alpha")["cluster"]["status"] in ("CREATING", "ACTIVE")
    assert iam.get_role(RoleName=role_name)["Role"]["RoleName"] == role_name
    assert effects(sandbox, "DeleteCluster") == 0 and effects(sandbox, "DeleteRole") == 0
    assert deleted.logs.filter(message__contains="is left alone").exists()


def test_activate_sets_the_requesting_users_active_cluster_and_no_one_elses(sandbox, cast, make_cluster, drive):
    alpha, beta = make_cluster("alpha"), make_cluster("beta")
    ActiveCluster.objects.create(user=cast.operator, team=cast.team, cluster=alpha)
    ActiveCluster.objects.create(user=cast.admin, team=cast.team, cluster=alpha)

    assert drive(start(cast, beta, ACTIVATE_KIND)).state == OperationState.SUCCEEDED
    assert drive(start(cast, alpha, ACTIVATE_KIND, actor=None)).state == OperationState.SUCCEEDED

    assert {(row.user, row.cluster) for row in ActiveCluster.objects.all()} == {
        (cast.operator, alpha), (cast.admin, beta)}


def test_a_cluster_role_iam_has_not_propagated_yet_is_retried_until_eks_takes_it(sandbox, cast, make_cluster, drive):
    sandbox.control("PUT", "iam", {"propagation_seconds": 2000})  # 2 s at the tests' time scale: longer than the
    # calls between the role's creation and CreateCluster take on a busy machine
    operation = drive(start(cast, make_cluster("alpha"), CREATE_KIND))

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    warnings = [line.message for line in operation.logs.filter(phase="eks", level="warning")]
    assert warnings and "could not be assumed" in warnings[0] and "retrying" in warnings[0]
    assert effects(sandbox, "CreateCluster") == 1
