"""Import of clusters made outside InstantStart (directly in the sandbox with boto3): the access entry, the facts,
the network, the dependencies found installed and the volumes found as PersistentVolumes.

The builders at the top make such clusters; the drift and inspection tests use them too."""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k8s

from cloud import aws, kube
from clusters import dependencies, hyperpod_chart, importing, services
from clusters.models import Cluster, ClusterState
from config.context import Source
from config.errors import ValidationFailed
from operations.context import StepContext
from operations.models import OperationState
from operations.services import operation_retry, operation_start
from tests import factories
from tests.clusters.sandbox import role_for
from tests.sandbox.aws.helpers import lifecycle_scripts

pytestmark = pytest.mark.usefixtures("import_allowed")

REGION = "us-west-2"
ACCOUNT = "123456789012"


def wait_for(read, done, *, timeout: float = 30.0):
    """Call ``read`` until ``done(value)``; the value, or a failed assertion after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = read()
        if done(value):
            return value
        assert time.monotonic() < deadline, f"still {value!r} after {timeout}s"
        time.sleep(0.05)


def make_network(cidr: str = "10.42.0.0/16") -> dict:
    """A VPC as a user might have built it: an internet gateway, two public subnets routed to it (found by route
    table), one private subnet tagged for internal load balancers and one private subnet on the main table."""
    ec2 = aws.client("ec2", region=REGION)
    prefix = cidr.rsplit(".", 2)[0]
    vpc_id = ec2.create_vpc(CidrBlock=cidr)["Vpc"]["VpcId"]
    gateway = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=gateway, VpcId=vpc_id)
    public_table = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_table, DestinationCidrBlock="0.0.0.0/0", GatewayId=gateway)

    def subnet(index: int, zone: str, tags: list[dict] | None = None) -> str:
        spec = [{"ResourceType": "subnet", "Tags": tags}] if tags else []
        return ec2.create_subnet(VpcId=vpc_id, CidrBlock=f"{prefix}.{index * 16}.0/20",
                                 AvailabilityZone=f"{REGION}{zone}", TagSpecifications=spec)["Subnet"]["SubnetId"]

    public = [subnet(0, "a"), subnet(1, "b")]
    for subnet_id in public:
        ec2.associate_route_table(RouteTableId=public_table, SubnetId=subnet_id)
    private = [subnet(2, "a", [{"Key": "kubernetes.io/role/internal-elb", "Value": "1"}]), subnet(3, "b")]
    compute = subnet(4, "a")
    security_group = ec2.create_security_group(GroupName=f"outside-{vpc_id}", Description="outside",
                                               VpcId=vpc_id)["GroupId"]
    return {"vpc_id": vpc_id, "public": public, "private": private, "compute": compute, "gateway": gateway,
            "public_table": public_table, "security_group": security_group}


def make_eks(name: str, subnet_ids: list[str], *, version: str = "1.32", mode: str = "API_AND_CONFIG_MAP",
             creator_admin: bool = True) -> dict:
    """An ACTIVE EKS cluster created with plain boto3."""
    eks = aws.client("eks", region=REGION)
    eks.create_cluster(name=name, version=version, roleArn=role_for("outside-eks"),
                       resourcesVpcConfig={"subnetIds": subnet_ids}, accessConfig={"authenticationMode": mode,
                                     "bootstrapClusterCreatorAdminPermissions": creator_admin})
    return wait_for(lambda: eks.describe_cluster(name=name)["cluster"], lambda found: found["status"] == "ACTIVE")


def make_hyperpod(name: str, eks_arn: str, subnet_ids: list[str], security_group: str, *,
                  instance_type: str = "ml.g5.8xlarge", count: int = 2) -> dict:
    """An InService HyperPod cluster orchestrated by ``eks_arn``."""
    lifecycle_scripts(aws.client("s3", region=REGION), [{"LifeCycleConfig": {
        "SourceS3Uri": "s3://outside-bucket/lifecycle", "OnCreate": "on_create.sh"}}])
    sagemaker = aws.client("sagemaker", region=REGION)
    sagemaker.create_cluster(
        ClusterName=name, Orchestrator={"Eks": {"ClusterArn": eks_arn}}, NodeRecovery="Automatic",
        VpcConfig={"SecurityGroupIds": [security_group], "Subnets": subnet_ids},
        InstanceGroups=[{"InstanceGroupName": "workers", "InstanceType": instance_type, "InstanceCount": count,
                         "ExecutionRole": role_for("outside-hyperpod", "sagemaker.amazonaws.com"),
                         "LifeCycleConfig": {"SourceS3Uri": "s3://outside-bucket/lifecycle",
                                             "OnCreate": "on_create.sh"}}],
    )
    return wait_for(lambda: sagemaker.describe_cluster(ClusterName=name),
                    lambda found: found["ClusterStatus"] == "InService")


PRINCIPAL = f"arn:aws:iam::{ACCOUNT}:user/moto"


def install_addon_outside(cluster: str, addon: str) -> None:
    eks = aws.client("eks", region=REGION)
    eks.create_addon(clusterName=cluster, addonName=addon)
    wait_for(lambda: eks.describe_addon(clusterName=cluster, addonName=addon)["addon"]["status"],
             lambda status: status == "ACTIVE")


def outside_admin(cluster: str) -> aws.Credentials:
    """Credentials of whoever built ``cluster`` outside InstantStart: an IAM user with its own access entry and
    cluster-wide AmazonEKSClusterAdminPolicy (InstantStart's principal gets nothing from it)."""
    iam, eks = aws.client("iam", region=REGION), aws.client("eks", region=REGION)
    arn = iam.create_user(UserName=f"{cluster}-admin")["User"]["Arn"]
    key = iam.create_access_key(UserName=f"{cluster}-admin")["AccessKey"]
    eks.create_access_entry(clusterName=cluster, principalArn=arn)
    eks.associate_access_policy(clusterName=cluster, principalArn=arn, accessScope={"type": "cluster"},
                                policyArn="arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy")
    return aws.Credentials(key["AccessKeyId"], key["SecretAccessKey"])


def make_volumes_outside(cluster: str) -> None:
    """An S3 PV (bound, with a prefix), an FSx PV, and an EBS PV that import must ignore, made by the cluster's
    outside admin."""
    core = k8s.CoreV1Api(kube.api_client(cluster, region=REGION, credentials=outside_admin(cluster)))

    def volume(name: str, driver: str, handle: str, attributes: dict, **spec) -> None:
        core.create_persistent_volume(k8s.V1PersistentVolume(
            metadata=k8s.V1ObjectMeta(name=name),
            spec=k8s.V1PersistentVolumeSpec(
                capacity={"storage": "1200Gi"}, access_modes=["ReadWriteMany"],
                csi=k8s.V1CSIPersistentVolumeSource(driver=driver, volume_handle=handle, volume_attributes=attributes),
                **spec)))

    volume("datasets", "s3.csi.aws.com", "s3-csi-driver-volume", {"bucketName": "outside-datasets"},
           mount_options=["allow-delete", "prefix training/"],
           claim_ref=k8s.V1ObjectReference(namespace="research", name="datasets"))
    volume("scratch", "fsx.csi.aws.com", "fs-0123456789abcdef0",
           {"dnsname": "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com", "mountname": "abcdefgh"})
    volume("block", "ebs.csi.aws.com", "vol-0123456789abcdef0", {})


def mutations_since(sandbox, seq: int) -> list[str]:
    return [entry["operation"] for entry in sandbox.control("GET", f"requests?since={seq}")["requests"]]


def last_seq(sandbox) -> int:
    return max((entry["seq"] for entry in sandbox.control("GET", "requests")["requests"]), default=0)


@pytest.fixture
def outside_cluster(sandbox):
    """An EKS cluster (no admin entry for its creator) with a managed node group, a HyperPod cluster, cert-manager
    installed as an add-on and three PersistentVolumes — all made with boto3 and the Kubernetes client, none of it by
    InstantStart."""
    network = make_network()
    eks = make_eks("outside", network["public"] + network["private"], creator_admin=False)
    aws.client("eks", region=REGION).create_nodegroup(clusterName="outside", nodegroupName="outside-cpu",
                                                      nodeRole=role_for("outside-nodes", "ec2.amazonaws.com"),
                                                      subnets=network["private"])
    hyperpod = make_hyperpod("outside-hp", eks["arn"], [network["compute"]], network["security_group"])
    install_addon_outside("outside", "cert-manager")
    make_volumes_outside("outside")
    return {"network": network, "eks": eks, "hyperpod": hyperpod}


def test_import_grants_access_and_records_what_it_finds(sandbox, cast, drive, outside_cluster):
    network, eks, hyperpod = outside_cluster["network"], outside_cluster["eks"], outside_cluster["hyperpod"]
    before = last_seq(sandbox)

    cluster, operation = services.cluster_import(actor=cast.admin, team=cast.team, region=REGION,
                                                 eks_name="outside", source=Source.SYSTEM)
    operation = drive(operation)

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    assert [phase.slug for phase in operation.phases.order_by("index")] == ["access", "discover"]
    assert operation.phases.get(slug="discover").reference["node_groups"] == ["outside-cpu"]
    cluster.refresh_from_db()
    assert (cluster.state, cluster.origin) == (ClusterState.ACTIVE, "imported")
    # EKS and HyperPod facts.
    assert (cluster.eks_arn, cluster.eks_status, cluster.kubernetes_version) == (eks["arn"], "ACTIVE", "1.32")
    assert cluster.eks_endpoint == eks["endpoint"] and cluster.oidc_issuer == eks["identity"]["oidc"]["issuer"]
    assert (cluster.hyperpod_name, cluster.hyperpod_arn, cluster.hyperpod_status, cluster.node_recovery) == (
        "outside-hp", hyperpod["ClusterArn"], "InService", "Automatic")
    assert (cluster.node_count, cluster.gpu_count) == (2, 2), "two ml.g5.8xlarge nodes, one A10G each"
    assert cluster.details["instance_groups"][0]["instance_type"] == "ml.g5.8xlarge"
    group = cluster.instance_groups.get()
    assert (group.name, group.instance_type, group.managed, group.target_count) == ("workers", "ml.g5.8xlarge",
                                                                                    False, 2)
    assert cluster.refreshed_at is not None
    # The control plane's own principal got a STANDARD access entry with cluster-wide admin.
    client = aws.client("eks", region=REGION)
    entry = client.describe_access_entry(clusterName="outside", principalArn=PRINCIPAL)["accessEntry"]
    assert entry["type"] == "STANDARD"
    policies = client.list_associated_access_policies(clusterName="outside", principalArn=PRINCIPAL)
    assert [(policy["policyArn"], policy["accessScope"]["type"]) for policy in policies["associatedAccessPolicies"]] \
        == [("arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy", "cluster")]
    assert cluster.details["access_entry"] == {"principal_arn": PRINCIPAL, "created_by_import": True}
    # The network, with roles guessed from route tables and tags.
    plan = cluster.network
    assert (plan.vpc_id, plan.vpc_cidr, plan.internet_gateway_id) == (network["vpc_id"], "10.42.0.0/16",
                                                                      network["gateway"])
    assert plan.route_tables["public"] == network["public_table"]
    assert plan.security_groups["hyperpod-1"] == network["security_group"]
    roles = {subnet.subnet_id: (subnet.role, subnet.zone) for subnet in plan.subnets.all()}
    assert roles == {network["public"][0]: ("public", "us-west-2a"), network["public"][1]: ("public", "us-west-2b"),
                     network["private"][0]: ("private", "us-west-2a"), network["private"][1]: ("private", "us-west-2b"),
                     network["compute"]: ("compute", "us-west-2a")}
    assert all(subnet.zone_id.startswith("usw2-az") for subnet in plan.subnets.all())
    # Dependencies found installed, none of them ours; HyperPod's required ones that are not there are reported.
    found = {row.component: row for row in cluster.dependencies.all()}
    assert set(found) == {"cert-manager", *hyperpod_chart.COMPONENTS}
    assert (found["cert-manager"].observed_state, found["cert-manager"].managed) == ("active", False)
    assert found["cert-manager"].version
    assert {(row.observed_state, row.managed) for name, row in found.items() if name != "cert-manager"} == {
        ("absent", False)}
    assert found["nvidia-device-plugin"].last_error == dependencies.REQUIRED_BY_HYPERPOD
    # S3 and FSx volumes, not the EBS one.
    volumes = {volume.name: volume for volume in cluster.volumes.all()}
    assert set(volumes) == {"datasets", "scratch"}
    s3, fsx = volumes["datasets"], volumes["scratch"]
    assert (s3.kind, s3.bucket, s3.prefix, s3.namespace, s3.pvc_name, s3.pv_name) == (
        "s3", "outside-datasets", "training/", "research", "datasets", "datasets")
    assert (fsx.kind, fsx.file_system_id, fsx.mount_name, fsx.capacity_gib) == ("fsx", "fs-0123456789abcdef0",
                                                                                 "abcdefgh", 1200)
    assert all(not volume.managed and volume.state == "available" and volume.team == cast.team
               for volume in volumes.values())
    # Nothing tagged, created or deleted but the access entry and its policy.
    assert mutations_since(sandbox, before) == ["CreateAccessEntry", "AssociateAccessPolicy"]


def test_discover_run_again_records_the_same_rows(sandbox, cast, drive, outside_cluster):
    cluster, operation = services.cluster_import(actor=cast.admin, team=cast.team, region=REGION,
                                                 eks_name="outside", source=Source.SYSTEM)
    drive(operation)
    counts = (cluster.dependencies.count(), cluster.volumes.count(), cluster.network.subnets.count())
    phase = operation.phases.get(slug="discover")
    importing.submit_discover(StepContext(operation, phase, lease=None, region=REGION))
    assert (cluster.dependencies.count(), cluster.volumes.count(), cluster.network.subnets.count()) == counts


def test_import_adopts_an_access_entry_that_is_there(sandbox, cast, drive):
    network = make_network()
    make_eks("mine", network["private"], mode="API")
    before = last_seq(sandbox)

    cluster, operation = services.cluster_import(actor=cast.admin, team=cast.team, region=REGION, eks_name="mine",
                                                 source=Source.SYSTEM)
    operation = drive(operation)

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.ACTIVE
    assert cluster.details["access_entry"] == {"principal_arn": PRINCIPAL, "created_by_import": False}
    assert (cluster.hyperpod_name, cluster.hyperpod_arn, cluster.node_count) == ("", "", 0), "no HyperPod cluster"
    assert mutations_since(sandbox, before) == [], "the creator's entry already grants admin: nothing is sent"


def test_a_config_map_cluster_is_refused_before_anything_is_written(sandbox, cast):
    make_eks("legacy", make_network()["private"], mode="CONFIG_MAP")

    with pytest.raises(ValidationFailed) as refused:
        services.cluster_import(actor=cast.admin, team=cast.team, region=REGION, eks_name="legacy",
                                source=Source.SYSTEM)

    assert refused.value.fields["eks_name"][0]["code"] == "access_entries_disabled"
    assert "authenticationMode=API_AND_CONFIG_MAP" in refused.value.message
    assert not Cluster.objects.filter(name="legacy").exists()


def test_the_access_phase_fails_on_config_map_auth_and_a_retry_succeeds_once_enabled(sandbox, cast, drive):
    make_eks("legacy", make_network()["private"], mode="CONFIG_MAP")
    cluster = factories.cluster(cast.team, "legacy", region=REGION, state=ClusterState.IMPORTING, origin="imported",
                                created_by=cast.admin)
    operation, _ = operation_start(actor=cast.admin, team=cast.team, kind=importing.KIND, title="Import legacy",
                                   params={"cluster_id": cluster.pk, "region": REGION, "eks_name": "legacy"},
                                   source=Source.SYSTEM, target=cluster)

    failed = drive(operation)

    assert (failed.state, failed.phase, failed.error_code) == (OperationState.FAILED, "access",
                                                               "access_entries_disabled")
    assert "update-cluster-config" in failed.error_message
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.FAILED

    client = aws.client("eks", region=REGION)
    client.update_cluster_config(name="legacy", accessConfig={"authenticationMode": "API_AND_CONFIG_MAP"})
    wait_for(lambda: client.describe_cluster(name="legacy")["cluster"]["status"], lambda status: status == "ACTIVE")
    retried = drive(operation_retry(actor=cast.admin, operation=failed, source=Source.SYSTEM))

    assert retried.state == OperationState.SUCCEEDED, retried.error_message
    cluster.refresh_from_db()
    assert cluster.state == ClusterState.ACTIVE
    assert client.describe_access_entry(clusterName="legacy", principalArn=PRINCIPAL)["accessEntry"]


def test_unknown_clusters_and_regions_are_refused(sandbox, cast):
    with pytest.raises(ValidationFailed) as missing:
        services.cluster_import(actor=cast.admin, team=cast.team, region=REGION, eks_name="nowhere",
                                source=Source.SYSTEM)
    assert missing.value.fields["eks_name"][0]["code"] == "eks_cluster_not_found"
    with pytest.raises(ValidationFailed) as region:
        importing.check_import(region="mars-north-1", eks_name="nowhere")
    assert region.value.fields["region"][0]["code"] == "unknown_region"


def test_cancelling_undoes_only_the_access_it_granted(sandbox, cast, drive, outside_cluster):
    make_eks("adopted", outside_cluster["network"]["private"])
    undone = {}
    for name in ("outside", "adopted"):
        _, operation = services.cluster_import(actor=cast.admin, team=cast.team, region=REGION, eks_name=name,
                                               source=Source.SYSTEM)
        drive(operation)
        phase = operation.phases.get(slug="access")
        importing.PIPELINE.phase("access").compensate(StepContext(operation, phase, lease=None, region=REGION))
        entries = aws.client("eks", region=REGION).list_access_entries(clusterName=name)["accessEntries"]
        undone[name] = PRINCIPAL in entries
    assert undone == {"outside": False, "adopted": True}, "the adopted creator entry is left alone"
