"""EKS managed node groups through boto3: validation, states and timing, updates, deletion, and the cluster that
cannot be deleted while it has node groups."""

from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from sandbox import clock
from sandbox.aws import world
from tests.sandbox.aws.helpers import ROLE, instantly, make_eks_cluster, sandbox_network, sandbox_role, wait_for

NODE_ROLE = ROLE.replace("sandbox-role", "nodes")


def _code(excinfo: pytest.ExceptionInfo[ClientError]) -> str:
    return excinfo.value.response["Error"]["Code"]


def _create(eks, name: str = "system", **extra):
    """Create a node group of cluster ``demo`` in the cluster's first subnet (unless ``extra`` says otherwise)."""
    try:
        subnets = eks.describe_cluster(name="demo")["cluster"]["resourcesVpcConfig"]["subnetIds"][:1]
    except eks.exceptions.ResourceNotFoundException:
        subnets = ["subnet-0123456789abcdef0"]
    request = {"clusterName": "demo", "nodegroupName": name, "nodeRole": NODE_ROLE, "subnets": subnets, **extra}
    return eks.create_nodegroup(**request)["nodegroup"]


def _refused(call, code: str, fragment: str = "") -> None:
    with pytest.raises(ClientError) as excinfo:
        call()
    assert _code(excinfo) == code, excinfo.value.response
    assert fragment in excinfo.value.response["Error"]["Message"]


def test_create_is_checked_as_eks_checks_it(client):
    eks = client("eks")
    _refused(lambda: _create(eks), "ResourceNotFoundException")
    clock.set_scale(1)
    network, other = sandbox_network(client), sandbox_network(client, cidr="10.1.0.0/16")
    eks.create_cluster(name="demo", roleArn=sandbox_role(client), resourcesVpcConfig={"subnetIds": network.subnet_ids})
    _refused(lambda: _create(eks), "InvalidRequestException", "not in ACTIVE status")
    with instantly():
        wait_for(lambda: eks.describe_cluster(name="demo")["cluster"]["status"], lambda status: status == "ACTIVE")
    _refused(lambda: _create(eks, "-bad"), "InvalidParameterException", "Nodegroup name")
    _refused(lambda: _create(eks, nodeRole="nodes"), "InvalidParameterException", "cannot be found")
    _refused(lambda: _create(eks, subnets=[]), "InvalidParameterException", "Subnets are required")
    _refused(lambda: _create(eks, subnets=[network.subnet_ids[0], "subnet-0123456789abcdef0"]),
             "InvalidParameterException", "The subnet ID 'subnet-0123456789abcdef0' does not exist "
                                          "(Service: AmazonEC2; Status Code: 400; Error Code: InvalidSubnetID.NotFound")
    _refused(lambda: _create(eks, subnets=other.subnet_ids), "InvalidParameterException",
             f"Specified subnets must belong to cluster's vpc {network.vpc_id}")
    _refused(lambda: _create(eks, scalingConfig={"minSize": 3, "maxSize": 4, "desiredSize": 2}),
             "InvalidParameterException", "Minimum capacity 3 can't be greater than desired size 2")
    _refused(lambda: _create(eks, scalingConfig={"minSize": 1, "maxSize": 2, "desiredSize": 3}),
             "InvalidParameterException", "Desired capacity 3 can't be greater than max size 2")
    _refused(lambda: _create(eks, scalingConfig={"minSize": 1, "desiredSize": 1}), "InvalidParameterException",
             "together")
    created = _create(eks, labels={"role": "system"}, tags={"team": "vision"})
    assert created["status"] == "CREATING"
    assert created["scalingConfig"] == {"minSize": 1, "maxSize": 2, "desiredSize": 2}
    assert (created["instanceTypes"], created["amiType"], created["capacityType"]) == (
        ["t3.medium"], "AL2023_x86_64_STANDARD", "ON_DEMAND")
    _refused(lambda: _create(eks), "ResourceInUseException", "already exists")
    _refused(lambda: eks.delete_nodegroup(clusterName="demo", nodegroupName="system"), "ResourceInUseException")
    _refused(lambda: eks.delete_cluster(name="demo"), "ResourceInUseException", "nodegroups")
    assert eks.list_nodegroups(clusterName="demo")["nodegroups"] == ["system"]
    assert eks.list_tags_for_resource(resourceArn=created["nodegroupArn"])["tags"] == {"team": "vision"}


def test_a_node_group_lives_creating_active_updating_deleting_gone(client):
    eks = client("eks")
    make_eks_cluster(client, accessConfig={"authenticationMode": "API"})
    _create(eks, instanceTypes=["m5.large"], labels={"instantstart.dev/node-role": "system"},
            scalingConfig={"minSize": 2, "maxSize": 2, "desiredSize": 2})
    entry = eks.describe_access_entry(clusterName="demo", principalArn=NODE_ROLE)["accessEntry"]
    assert entry["type"] == "EC2_LINUX"
    describe = lambda: eks.describe_nodegroup(clusterName="demo", nodegroupName="system")["nodegroup"]  # noqa: E731
    wait_for(describe, lambda group: group["status"] == "ACTIVE")
    nodes = world.eks_nodegroup_nodes("us-west-2", "demo")
    assert [(node.nodegroup, node.instance_type) for node in nodes] == [("system", "m5.large")] * 2
    assert nodes[0].labels == {"instantstart.dev/node-role": "system"}

    _refused(lambda: eks.update_nodegroup_config(clusterName="demo", nodegroupName="system",
                                                 scalingConfig={"desiredSize": 3}),
             "InvalidParameterException", "Desired capacity 3 can't be greater than max size 2")
    _refused(lambda: eks.update_nodegroup_config(clusterName="demo", nodegroupName="system",
                                                 scalingConfig={"desiredSize": 2}), "InvalidParameterException",
             "No changes")
    update = eks.update_nodegroup_config(clusterName="demo", nodegroupName="system",
                                         scalingConfig={"maxSize": 3, "desiredSize": 3},
                                         taints={"addOrUpdateTaints": [{"key": "dedicated", "value": "system",
                                                                        "effect": "NO_SCHEDULE"}]})["update"]
    assert describe()["status"] == "UPDATING"
    _refused(lambda: eks.update_nodegroup_config(clusterName="demo", nodegroupName="system",
                                                 scalingConfig={"desiredSize": 2}), "ResourceInUseException")
    assert eks.list_updates(name="demo", nodegroupName="system")["updateIds"] == [update["id"]]
    assert eks.list_updates(name="demo")["updateIds"] == []
    done = wait_for(describe, lambda group: group["status"] == "ACTIVE")
    assert done["scalingConfig"] == {"minSize": 2, "maxSize": 3, "desiredSize": 3}
    assert done["taints"] == [{"key": "dedicated", "value": "system", "effect": "NO_SCHEDULE"}]
    assert len(world.eks_nodegroup_nodes("us-west-2", "demo")) == 3
    assert eks.describe_update(name="demo", nodegroupName="system", updateId=update["id"])["update"]["status"] == (
        "Successful")

    assert eks.delete_nodegroup(clusterName="demo", nodegroupName="system")["nodegroup"]["status"] == "DELETING"
    assert eks.delete_nodegroup(clusterName="demo", nodegroupName="system")["nodegroup"]["status"] == "DELETING"
    wait_for(lambda: eks.list_nodegroups(clusterName="demo")["nodegroups"], lambda names: names == [])
    assert world.eks_nodegroup_nodes("us-west-2", "demo") == []
    _refused(describe, "ResourceNotFoundException")
    assert eks.delete_cluster(name="demo")["cluster"]["status"] == "DELETING"


def test_a_requested_failure_ends_create_failed_with_a_health_issue(client):
    eks = client("eks")
    make_eks_cluster(client)
    _create(eks, "broken", tags={"sandbox:fail": "true"})
    failed = wait_for(lambda: eks.describe_nodegroup(clusterName="demo", nodegroupName="broken")["nodegroup"],
                      lambda group: group["status"] != "CREATING")
    assert failed["status"] == "CREATE_FAILED"
    (issue,) = failed["health"]["issues"]
    assert issue["code"] == "NodeCreationFailure" and "failed to join" in issue["message"]
    assert world.eks_nodegroup_nodes("us-west-2", "demo") == []
    _refused(lambda: eks.update_nodegroup_config(clusterName="demo", nodegroupName="broken",
                                                 scalingConfig={"desiredSize": 1}), "ResourceInUseException")
    assert eks.delete_nodegroup(clusterName="demo", nodegroupName="broken")["nodegroup"]["status"] == "DELETING"
