"""EKS through boto3: clusters, add-ons, access entries and policies, pod identity, updates, tags."""

from __future__ import annotations

import pytest
import requests
from botocore.exceptions import ClientError

from sandbox import clock
from tests.sandbox.aws.helpers import (
    ACCOUNT,
    ROLE,
    StringStarting,
    instantly,
    make_eks_cluster,
    sandbox_network,
    sandbox_role,
    wait_for,
)

PRODUCT_ADDONS = ("eks-pod-identity-agent", "cert-manager", "aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver",
                  "amazon-sagemaker-hyperpod-training-operator", "amazon-sagemaker-hyperpod-inference",
                  "amazon-cloudwatch-observability", "amazon-sagemaker-hyperpod-observability", "metrics-server")


def _code(excinfo: pytest.ExceptionInfo[ClientError]) -> str:
    return excinfo.value.response["Error"]["Code"]


def test_cluster_fields_defaults_and_errors(client):
    eks = client("eks")
    cluster = make_eks_cluster(client, tags={"team": "vision"}, version="1.32",
                               accessConfig={"authenticationMode": "API"})
    assert cluster["version"] == "1.32" and cluster["tags"] == {"team": "vision"}
    assert cluster["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True}
    subnets = cluster["resourcesVpcConfig"]["subnetIds"]
    assert len(subnets) == 2 and cluster["resourcesVpcConfig"]["vpcId"].startswith("vpc-")
    assert cluster["arn"] == f"arn:aws:eks:us-west-2:{ACCOUNT}:cluster/demo"
    assert eks.list_clusters()["clusters"] == ["demo"]
    with pytest.raises(ClientError) as excinfo:
        eks.create_cluster(name="demo", roleArn=ROLE, resourcesVpcConfig={"subnetIds": subnets})
    assert _code(excinfo) == "ResourceInUseException"
    with pytest.raises(ClientError) as excinfo:
        eks.describe_cluster(name="missing")
    assert _code(excinfo) == "ResourceNotFoundException"
    assert excinfo.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404
    with pytest.raises(ClientError) as excinfo:
        eks.create_cluster(name="old", version="1.20", roleArn=ROLE, resourcesVpcConfig={"subnetIds": subnets})
    assert _code(excinfo) == "InvalidParameterException"


def _refusal(call) -> tuple[str, str]:
    with pytest.raises(ClientError) as excinfo:
        call()
    return _code(excinfo), excinfo.value.response["Error"]["Message"]


def test_subnets_and_security_groups_must_exist_in_one_vpc_and_two_zones(client):
    ec2, eks = client("ec2"), client("eks")
    network, other = sandbox_network(client), sandbox_network(client, cidr="10.1.0.0/16")
    (one, three), group = network.subnet_ids, network.security_group_id
    two = ec2.create_subnet(VpcId=network.vpc_id, CidrBlock="10.0.2.0/24",
                            AvailabilityZone="us-west-2a")["Subnet"]["SubnetId"]
    create = lambda **vpc: lambda: eks.create_cluster(  # noqa: E731
        name="refused", roleArn=sandbox_role(client), resourcesVpcConfig=vpc)
    assert _refusal(create(subnetIds=[one, "subnet-0123456789abcdef0"])) == (
        "InvalidParameterException", StringStarting("The subnet ID 'subnet-0123456789abcdef0' does not exist "
                                                    "(Service: AmazonEC2; Status Code: 400; Error Code: "
                                                    "InvalidSubnetID.NotFound;"))
    assert _refusal(create(subnetIds=[one, two])) == (
        "InvalidParameterException", "Subnets specified must be in at least two different AZs.")
    assert _refusal(create(subnetIds=[one, other.subnet_ids[1]])) == (
        "InvalidParameterException", "Subnets specified must belong to the same VPC.")
    assert _refusal(create(subnetIds=[one, three], securityGroupIds=["sg-0123456789abcdef0"])) == (
        "InvalidParameterException", StringStarting("The security group 'sg-0123456789abcdef0' does not exist "
                                                    "(Service: AmazonEC2; Status Code: 400; Error Code: "
                                                    "InvalidGroup.NotFound;"))
    assert _refusal(create(subnetIds=[one, three], securityGroupIds=[other.security_group_id])) == (
        "InvalidParameterException",
        f"A security group is not in the same VPC as the subnets. The security group {other.security_group_id} is "
        f"in the following VPC: {other.vpc_id}. The subnets are in the following VPC: {network.vpc_id}")
    assert eks.list_clusters()["clusters"] == []
    created = eks.create_cluster(name="two-az", roleArn=ROLE,
                                 resourcesVpcConfig={"subnetIds": [one, three], "securityGroupIds": [group]})
    assert created["cluster"]["resourcesVpcConfig"]["vpcId"] == network.vpc_id


def test_the_cluster_security_group_lives_in_ec2_until_the_cluster_is_gone(client):
    ec2, eks = client("ec2"), client("eks")
    cluster = make_eks_cluster(client)
    group_id = cluster["resourcesVpcConfig"]["clusterSecurityGroupId"]
    (group,) = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"]
    assert group["VpcId"] == cluster["resourcesVpcConfig"]["vpcId"]
    assert group["GroupName"].startswith("eks-cluster-sg-demo-")
    assert {tag["Key"]: tag["Value"] for tag in group["Tags"]}["aws:eks:cluster-name"] == "demo"
    eks.delete_cluster(name="demo")
    with instantly():
        wait_for(lambda: eks.list_clusters()["clusters"], lambda names: names == [])
    assert not ec2.describe_security_groups(Filters=[{"Name": "group-id", "Values": [group_id]}])["SecurityGroups"]


def test_delete_cluster_goes_through_deleting(client):
    eks = client("eks")
    make_eks_cluster(client)
    clock.set_scale(0.001)
    assert eks.delete_cluster(name="demo")["cluster"]["status"] == "DELETING"
    wait_for(lambda: eks.list_clusters()["clusters"], lambda names: names == [])


def test_addon_catalog_offers_the_product_addons(client):
    eks = client("eks")
    addons = {info["addonName"]: info for info in eks.describe_addon_versions(kubernetesVersion="1.33")["addons"]}
    assert set(PRODUCT_ADDONS) <= set(addons)
    training = addons["amazon-sagemaker-hyperpod-training-operator"]["addonVersions"][0]
    assert training["compatibilities"] == [{"clusterVersion": "1.33", "platformVersions": ["*"],
                                            "defaultVersion": True}]
    only = eks.describe_addon_versions(addonName="cert-manager")["addons"]
    assert [info["addonName"] for info in only] == ["cert-manager"]
    assert eks.describe_addon_versions(kubernetesVersion="1.10")["addons"] == []


def test_addon_lifecycle_degraded_on_request_and_idempotent_token(client, aws_sandbox):
    eks = client("eks")
    make_eks_cluster(client)
    clock.set_scale(0.001)
    created = eks.create_addon(clusterName="demo", addonName="eks-pod-identity-agent", clientRequestToken="tok-1")
    assert created["addon"]["status"] == "CREATING"
    replay = eks.create_addon(clusterName="demo", addonName="eks-pod-identity-agent", clientRequestToken="tok-1")
    assert replay["addon"]["addonArn"] == created["addon"]["addonArn"]
    with pytest.raises(ClientError) as excinfo:
        eks.create_addon(clusterName="demo", addonName="eks-pod-identity-agent", clientRequestToken="tok-2")
    assert _code(excinfo) == "ResourceInUseException"
    requests.post(f"{aws_sandbox.url}/_sandbox/outcomes", json={"resource": "eks-addon", "name": "aws-fsx-*",
                                                                  "outcome": "degrade"}, timeout=5)
    eks.create_addon(clusterName="demo", addonName="aws-fsx-csi-driver",
                     podIdentityAssociations=[{"serviceAccount": "fsx-csi-controller-sa", "roleArn": ROLE}])
    status = lambda name: eks.describe_addon(clusterName="demo", addonName=name)["addon"]  # noqa: E731
    assert wait_for(lambda: status("eks-pod-identity-agent"), lambda a: a["status"] == "ACTIVE")
    degraded = wait_for(lambda: status("aws-fsx-csi-driver"), lambda a: a["status"] != "CREATING")
    assert degraded["status"] == "DEGRADED" and degraded["health"]["issues"][0]["code"]
    assert len(degraded["podIdentityAssociations"]) == 1
    assert eks.list_addons(clusterName="demo")["addons"] == ["aws-fsx-csi-driver", "eks-pod-identity-agent"]
    update = eks.update_addon(clusterName="demo", addonName="eks-pod-identity-agent",
                              addonVersion="v1.3.8-eksbuild.2")["update"]
    assert (update["type"], update["status"]) == ("AddonUpdate", "InProgress")
    assert status("eks-pod-identity-agent")["status"] == "UPDATING"
    wait_for(lambda: eks.describe_update(name="demo", updateId=update["id"],
                                         addonName="eks-pod-identity-agent")["update"]["status"],
             lambda s: s == "Successful")
    eks.delete_addon(clusterName="demo", addonName="aws-fsx-csi-driver")
    wait_for(lambda: eks.list_addons(clusterName="demo")["addons"], lambda names: names == ["eks-pod-identity-agent"])
    assert eks.list_pod_identity_associations(clusterName="demo")["associations"] == []


def test_addon_errors(client):
    eks = client("eks")
    make_eks_cluster(client, "young")
    previous = clock.scale()
    clock.set_scale(1.0)  # "creating" must still be CREATING when its add-on is asked for, however slow the host
    try:
        eks.create_cluster(name="creating", roleArn=ROLE,
                           resourcesVpcConfig={"subnetIds": sandbox_network(client, cidr="10.1.0.0/16").subnet_ids})
        for kwargs, code in (({"clusterName": "creating", "addonName": "cert-manager"}, "InvalidRequestException"),
                             ({"clusterName": "missing", "addonName": "cert-manager"}, "ResourceNotFoundException"),
                             ({"clusterName": "young", "addonName": "not-an-addon"}, "InvalidParameterException"),
                             ({"clusterName": "young", "addonName": "cert-manager", "addonVersion": "v0.0.1"},
                              "InvalidParameterException")):
            with pytest.raises(ClientError) as excinfo:
                eks.create_addon(**kwargs)
            assert _code(excinfo) == code, kwargs
    finally:
        clock.set_scale(previous)
    with pytest.raises(ClientError) as excinfo:
        eks.describe_addon(clusterName="young", addonName="cert-manager")
    assert _code(excinfo) == "ResourceNotFoundException"


def test_access_entries_and_policies(client):
    eks = client("eks")
    make_eks_cluster(client)
    with pytest.raises(ClientError) as excinfo:
        eks.create_access_entry(clusterName="demo", principalArn=ROLE)
    assert _code(excinfo) == "InvalidRequestException"
    with instantly():
        eks.update_cluster_config(name="demo", accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})
        wait_for(lambda: eks.describe_cluster(name="demo")["cluster"]["status"], lambda s: s == "ACTIVE")
    creator = f"arn:aws:iam::{ACCOUNT}:user/moto"
    assert eks.list_access_entries(clusterName="demo")["accessEntries"] == [creator]
    entry = eks.create_access_entry(clusterName="demo", principalArn=ROLE, kubernetesGroups=["viewers"])["accessEntry"]
    assert entry["username"] == f"arn:aws:sts::{ACCOUNT}:assumed-role/sandbox-role/{{{{SessionName}}}}"
    with pytest.raises(ClientError) as excinfo:
        eks.create_access_entry(clusterName="demo", principalArn=ROLE)
    assert _code(excinfo) == "ResourceInUseException"
    policy = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSViewPolicy"
    associated = eks.associate_access_policy(clusterName="demo", principalArn=ROLE, policyArn=policy,
                                             accessScope={"type": "namespace", "namespaces": ["team-a"]})
    assert associated["associatedAccessPolicy"]["accessScope"] == {"type": "namespace", "namespaces": ["team-a"]}
    listed = eks.list_associated_access_policies(clusterName="demo", principalArn=ROLE)["associatedAccessPolicies"]
    assert [item["policyArn"] for item in listed] == [policy]
    assert eks.list_access_entries(clusterName="demo", associatedPolicyArn=policy)["accessEntries"] == [ROLE]
    with pytest.raises(ClientError) as excinfo:
        eks.associate_access_policy(clusterName="demo", principalArn=ROLE, policyArn=policy,
                                    accessScope={"type": "namespace"})
    assert _code(excinfo) == "InvalidParameterException"
    eks.update_access_entry(clusterName="demo", principalArn=ROLE, kubernetesGroups=["editors"])
    assert eks.describe_access_entry(clusterName="demo", principalArn=ROLE)["accessEntry"]["kubernetesGroups"] == [
        "editors"]
    eks.disassociate_access_policy(clusterName="demo", principalArn=ROLE, policyArn=policy)
    eks.delete_access_entry(clusterName="demo", principalArn=ROLE)
    with pytest.raises(ClientError) as excinfo:
        eks.describe_access_entry(clusterName="demo", principalArn=ROLE)
    assert _code(excinfo) == "ResourceNotFoundException"
    names = {policy["name"] for policy in eks.list_access_policies()["accessPolicies"]}
    assert {"AmazonEKSClusterAdminPolicy", "AmazonEKSViewPolicy"} <= names


def test_pod_identity_associations(client):
    eks = client("eks")
    make_eks_cluster(client)
    association = eks.create_pod_identity_association(clusterName="demo", namespace="aws-hyperpod",
                                                      serviceAccount="operator", roleArn=ROLE)["association"]
    assert association["associationId"].startswith("a-")
    with pytest.raises(ClientError) as excinfo:
        eks.create_pod_identity_association(clusterName="demo", namespace="aws-hyperpod", serviceAccount="operator",
                                            roleArn=ROLE)
    assert _code(excinfo) == "ResourceInUseException"
    listed = eks.list_pod_identity_associations(clusterName="demo", namespace="aws-hyperpod")["associations"]
    assert [item["associationId"] for item in listed] == [association["associationId"]]
    other = f"arn:aws:iam::{ACCOUNT}:role/other"
    eks.update_pod_identity_association(clusterName="demo", associationId=association["associationId"],
                                        roleArn=other)
    described = eks.describe_pod_identity_association(clusterName="demo", associationId=association["associationId"])
    assert described["association"]["roleArn"] == other
    eks.delete_pod_identity_association(clusterName="demo", associationId=association["associationId"])
    assert eks.list_pod_identity_associations(clusterName="demo")["associations"] == []


def test_config_and_version_updates_and_tags(client):
    eks = client("eks")
    cluster = make_eks_cluster(client, version="1.32")
    with pytest.raises(ClientError) as excinfo:
        eks.update_cluster_config(name="demo", accessConfig={"authenticationMode": "CONFIG_MAP"})
    assert _code(excinfo) == "InvalidParameterException"
    with pytest.raises(ClientError) as excinfo:
        eks.update_cluster_version(name="demo", version="1.34")
    assert _code(excinfo) == "InvalidParameterException"
    clock.set_scale(0.0005)
    update = eks.update_cluster_version(name="demo", version="1.33")["update"]
    assert eks.describe_cluster(name="demo")["cluster"]["status"] == "UPDATING"
    done = wait_for(lambda: eks.describe_cluster(name="demo")["cluster"], lambda c: c["status"] == "ACTIVE")
    assert done["version"] == "1.33"
    assert eks.describe_update(name="demo", updateId=update["id"])["update"]["status"] == "Successful"
    assert eks.list_updates(name="demo")["updateIds"] == [update["id"]]
    eks.tag_resource(resourceArn=cluster["arn"], tags={"env": "test"})
    eks.untag_resource(resourceArn=cluster["arn"], tagKeys=["env"])
    eks.tag_resource(resourceArn=cluster["arn"], tags={"owner": "ada"})
    assert eks.list_tags_for_resource(resourceArn=cluster["arn"])["tags"] == {"owner": "ada"}


def test_hyperpod_operators_fail_without_their_prerequisites(client):
    eks = client("eks")
    make_eks_cluster(client)
    status = lambda name: eks.describe_addon(clusterName="demo", addonName=name)["addon"]  # noqa: E731
    eks.create_addon(clusterName="demo", addonName="cert-manager")
    eks.create_addon(clusterName="demo", addonName="amazon-sagemaker-hyperpod-training-operator")
    failed = wait_for(lambda: status("amazon-sagemaker-hyperpod-training-operator"),
                      lambda addon: addon["status"] != "CREATING")
    assert failed["status"] == "CREATE_FAILED"
    (issue,) = failed["health"]["issues"]
    assert "cert-manager" in issue["message"] and "eks-pod-identity-agent" in issue["message"]
    wait_for(lambda: status("cert-manager")["status"], lambda s: s == "ACTIVE")
    eks.create_addon(clusterName="demo", addonName="amazon-sagemaker-hyperpod-inference")
    failed = wait_for(lambda: status("amazon-sagemaker-hyperpod-inference"), lambda a: a["status"] != "CREATING")
    assert failed["status"] == "CREATE_FAILED"
    assert failed["health"]["issues"][0]["message"].endswith("missing: eks-pod-identity-agent.")
    eks.create_addon(clusterName="demo", addonName="eks-pod-identity-agent")
    wait_for(lambda: status("eks-pod-identity-agent")["status"], lambda s: s == "ACTIVE")
    eks.delete_addon(clusterName="demo", addonName="amazon-sagemaker-hyperpod-training-operator")
    wait_for(lambda: eks.list_addons(clusterName="demo")["addons"],
             lambda names: "amazon-sagemaker-hyperpod-training-operator" not in names)
    eks.create_addon(clusterName="demo", addonName="amazon-sagemaker-hyperpod-training-operator")
    installed = wait_for(lambda: status("amazon-sagemaker-hyperpod-training-operator"),
                         lambda addon: addon["status"] != "CREATING")
    assert (installed["status"], installed["health"]["issues"]) == ("ACTIVE", [])
