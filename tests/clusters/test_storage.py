"""Storage: the *storage* phase (create and delete) and the ``storage.create`` / ``storage.delete`` pipelines,
against the sandbox's AWS and Kubernetes emulator, with the CSI drivers installed as EKS add-ons directly."""

from __future__ import annotations

import time

import pytest
from kubernetes import client as k8s

from cloud import aws, kube
from clusters import storage
from clusters.capacity import place_instance_group
from clusters.models import StorageKind, StorageState, StorageVolume
from clusters.phases import storage as storage_phase
from clusters.shared_bucket import shared_bucket_name
from operations import services
from operations.models import Operation, OperationState
from operations.pipeline import Pipeline, register
from tests import factories
from tests.clusters.test_capacity import REGION, build_network
from tests.clusters.test_hyperpod_phase import build_eks, sandbox_requests

CREATE_KIND = "test.clusters.storage"
DELETE_KIND = "test.clusters.storage-delete"
register(Pipeline(kind=CREATE_KIND, phases=(storage_phase.CREATE,)))
register(Pipeline(kind=DELETE_KIND, phases=(storage_phase.DELETE,)))
CSI_ADDONS = ("aws-mountpoint-s3-csi-driver", "aws-fsx-csi-driver")


@pytest.fixture
def ready(sandbox, make_cluster):
    """``make(**spec)`` → a cluster with its network, compute subnet, ACTIVE EKS cluster and CSI driver add-ons,
    and the outputs the earlier phases leave."""

    def make(name: str = "alpha", **spec):
        cluster = make_cluster(name, **spec)
        network = build_network(cluster)
        outputs = {**network, **build_eks(cluster, network)}
        placement = place_instance_group(cluster, zone=cluster.spec["zone"], ec2=aws.client("ec2", region=REGION))
        eks = aws.client("eks", region=REGION)
        for addon in CSI_ADDONS:
            eks.create_addon(clusterName=cluster.eks_name, addonName=addon)
        deadline = time.monotonic() + 10
        while any(eks.describe_addon(clusterName=cluster.eks_name, addonName=addon)["addon"]["status"] != "ACTIVE"
                  for addon in CSI_ADDONS):
            assert time.monotonic() < deadline, "the CSI add-ons did not become ACTIVE"
            time.sleep(0.05)
        cluster.refresh_from_db()
        return cluster, {**outputs, "compute_subnet_id": placement.subnet_id}

    return make


def start(cast, cluster, kind: str, outputs: dict | None = None, **params) -> Operation:
    operation, _ = services.operation_start(actor=cast.admin, team=cast.team, kind=kind, title=kind,
                                            params={"cluster_id": cluster.pk, **cluster.spec, **params},
                                            source="system")
    Operation.objects.filter(pk=operation.pk).update(outputs=outputs or {})
    return operation


def core_of(cluster) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(kube.api_client(cluster.eks_name, region=REGION))


def test_the_phase_mounts_the_shared_bucket_in_the_team_namespace(sandbox, cast, ready, drive):
    cluster, outputs = ready()

    operation = drive(start(cast, cluster, CREATE_KIND, outputs))

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    volume = StorageVolume.objects.get(cluster=cluster)
    bucket = shared_bucket_name(REGION)
    assert (volume.name, volume.kind, volume.shared, volume.state) == ("shared", "s3", True, "available")
    assert (volume.bucket, volume.prefix, volume.namespace) == (bucket, "teams/vision/", "team-vision")
    core = core_of(cluster)
    namespace = core.read_namespace("team-vision")
    assert namespace.metadata.labels["app.kubernetes.io/managed-by"] == "instantstart"
    pv = core.read_persistent_volume(volume.pv_name)  # deserialised into the client's strict models
    assert pv.spec.csi.driver == "s3.csi.aws.com"
    assert pv.spec.csi.volume_attributes == {"bucketName": bucket}
    assert pv.spec.csi.volume_handle == f"instantstart-{volume.pk}"
    assert pv.spec.mount_options == ["allow-delete", "allow-other", "region us-west-2", "prefix teams/vision/"]
    assert pv.spec.access_modes == ["ReadWriteMany"] and pv.spec.persistent_volume_reclaim_policy == "Retain"
    assert pv.spec.storage_class_name == "" and pv.status.phase == "Bound"
    assert pv.metadata.labels["instantstart.io/cluster"] == str(cluster.pk)
    pvc = core.read_namespaced_persistent_volume_claim("shared", "team-vision")
    assert pvc.spec.volume_name == volume.pv_name and pvc.status.phase == "Bound"
    assert pvc.spec.access_modes == ["ReadWriteMany"]
    serialized = k8s.ApiClient().sanitize_for_serialization(storage.persistent_volume(volume))
    assert serialized["spec"]["csi"] == {"driver": "s3.csi.aws.com", "volumeHandle": f"instantstart-{volume.pk}",
                                         "volumeAttributes": {"bucketName": bucket}}
    assert serialized["spec"]["claimRef"]["name"] == "shared"


def test_the_phase_builds_fsx_for_lustre_in_the_compute_subnet_exactly_once(sandbox, cast, ready, drive):
    cluster, outputs = ready(fsx_capacity_gib=1200)

    operation = drive(start(cast, cluster, CREATE_KIND, outputs))

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    volume = StorageVolume.objects.get(cluster=cluster, kind=StorageKind.FSX)
    assert volume.state == StorageState.AVAILABLE and volume.capacity_gib == 1200
    [system] = aws.client("fsx", region=REGION).describe_file_systems()["FileSystems"]
    assert system["FileSystemId"] == volume.file_system_id and system["Lifecycle"] == "AVAILABLE"
    assert system["SubnetIds"] == [outputs["compute_subnet_id"]]
    [request] = sandbox_requests(sandbox, "fsx:CreateFileSystem")
    assert request["params"]["SecurityGroupIds"] == [outputs["security_group_id"]]
    assert system["LustreConfiguration"]["DeploymentType"] == "PERSISTENT_2"
    assert {"Key": "instantstart:cluster-id", "Value": str(cluster.pk)} in system["Tags"]
    pv = core_of(cluster).read_persistent_volume(volume.pv_name)
    assert pv.spec.csi.driver == "fsx.csi.aws.com"
    assert pv.spec.csi.volume_handle == system["FileSystemId"]
    assert pv.spec.csi.volume_attributes == {"dnsname": system["DNSName"],
                                             "mountname": system["LustreConfiguration"]["MountName"]}
    assert pv.spec.capacity == {"storage": "1200Gi"}
    assert core_of(cluster).read_namespaced_persistent_volume_claim("fsx", "team-vision").status.phase == "Bound"

    again = drive(start(cast, cluster, CREATE_KIND, outputs))
    assert again.state == OperationState.SUCCEEDED
    assert len(sandbox_requests(sandbox, "fsx:CreateFileSystem")) == 1
    assert StorageVolume.objects.filter(cluster=cluster).count() == 2


def test_storage_create_mounts_a_bucket_the_team_names(sandbox, cast, ready, drive):
    cluster, _ = ready()
    aws.client("s3", region=REGION).create_bucket(Bucket="vision-datasets",
                                                  CreateBucketConfiguration={"LocationConstraint": REGION})
    core_of(cluster).create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team-vision")))
    volume = factories.storage_volume(cluster, "datasets", bucket="vision-datasets", prefix="imagenet")

    operation = drive(start(cast, cluster, storage.CREATE_KIND, volume_id=volume.pk))

    assert operation.state == OperationState.SUCCEEDED, operation.error_message
    volume.refresh_from_db()
    assert volume.state == StorageState.AVAILABLE
    pv = core_of(cluster).read_persistent_volume(volume.pv_name)
    assert pv.spec.csi.volume_attributes == {"bucketName": "vision-datasets"}
    assert "prefix imagenet/" in pv.spec.mount_options
    assert core_of(cluster).read_namespaced_persistent_volume_claim("datasets", "team-vision").status.phase == "Bound"


def test_storage_create_of_a_missing_bucket_fails_clearly(sandbox, cast, ready, drive):
    cluster, _ = ready()
    volume = factories.storage_volume(cluster, "nothing", bucket="no-such-bucket")

    operation = drive(start(cast, cluster, storage.CREATE_KIND, volume_id=volume.pk))

    assert operation.state == OperationState.FAILED
    assert operation.error_code == "bucket_not_found"
    volume.refresh_from_db()
    assert volume.state == StorageState.FAILED and "no-such-bucket" in volume.last_error
    with pytest.raises(k8s.exceptions.ApiException):
        core_of(cluster).read_persistent_volume(volume.pv_name)


def test_storage_create_and_delete_of_an_fsx_volume(sandbox, cast, ready, drive):
    cluster, outputs = ready()
    core_of(cluster).create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team-vision")))
    volume = factories.storage_volume(cluster, "scratch", kind=StorageKind.FSX, capacity_gib=2400)

    created = drive(start(cast, cluster, storage.CREATE_KIND, volume_id=volume.pk))
    assert created.state == OperationState.SUCCEEDED, created.error_message
    volume.refresh_from_db()
    fsx = aws.client("fsx", region=REGION)
    [system] = fsx.describe_file_systems()["FileSystems"]
    assert system["SubnetIds"] == [outputs["compute_subnet_id"]] and system["StorageCapacity"] == 2400

    volume.state = StorageState.DELETING
    volume.save()
    deleted = drive(start(cast, cluster, storage.DELETE_KIND, volume_id=volume.pk))

    assert deleted.state == OperationState.SUCCEEDED, deleted.error_message
    volume.refresh_from_db()
    assert volume.state == StorageState.DELETED
    assert fsx.describe_file_systems()["FileSystems"] == []
    core = core_of(cluster)
    assert core.list_persistent_volume(label_selector=f"instantstart.io/volume={volume.pk}").items == []
    assert core.list_namespaced_persistent_volume_claim("team-vision").items == []


def test_storage_delete_never_deletes_a_bucket_or_a_file_system_that_is_not_ours(sandbox, cast, ready, drive):
    cluster, outputs = ready()
    s3 = aws.client("s3", region=REGION)
    s3.create_bucket(Bucket="vision-datasets", CreateBucketConfiguration={"LocationConstraint": REGION})
    core_of(cluster).create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team-vision")))
    bucket_volume = factories.storage_volume(cluster, "datasets", bucket="vision-datasets")
    assert drive(start(cast, cluster, storage.CREATE_KIND, volume_id=bucket_volume.pk)).state == "succeeded"
    fsx = aws.client("fsx", region=REGION)
    foreign = fsx.create_file_system(FileSystemType="LUSTRE", StorageCapacity=1200,
                                     SubnetIds=[outputs["compute_subnet_id"]],
                                     LustreConfiguration={"DeploymentType": "SCRATCH_2"})["FileSystem"]
    imported = factories.storage_volume(cluster, "found", kind=StorageKind.FSX, managed=False,
                                        file_system_id=foreign["FileSystemId"], capacity_gib=1200,
                                        state=StorageState.DELETING)

    for volume in (bucket_volume, imported):
        StorageVolume.objects.filter(pk=volume.pk).update(state=StorageState.DELETING)
        assert drive(start(cast, cluster, storage.DELETE_KIND, volume_id=volume.pk)).state == "succeeded"

    assert s3.head_bucket(Bucket="vision-datasets")["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert [system["FileSystemId"] for system in fsx.describe_file_systems()["FileSystems"]] == [
        foreign["FileSystemId"]]
    assert sandbox_requests(sandbox, "s3:DeleteBucket") == []
    assert sandbox_requests(sandbox, "fsx:DeleteFileSystem") == []
    assert set(StorageVolume.objects.values_list("state", flat=True)) == {"deleted"}


def test_the_delete_phase_removes_only_our_volumes(sandbox, cast, ready, drive):
    cluster, outputs = ready(fsx_capacity_gib=1200)
    assert drive(start(cast, cluster, CREATE_KIND, outputs)).state == OperationState.SUCCEEDED
    core = core_of(cluster)
    foreign = k8s.V1PersistentVolume(
        metadata=k8s.V1ObjectMeta(name="someone-elses"),
        spec=k8s.V1PersistentVolumeSpec(capacity={"storage": "1Gi"}, access_modes=["ReadWriteMany"],
                                        csi=k8s.V1CSIPersistentVolumeSource(driver="s3.csi.aws.com",
                                                                            volume_handle="theirs",
                                                                            volume_attributes={"bucketName": "x"})))
    core.create_persistent_volume(foreign)

    deleted = drive(start(cast, cluster, DELETE_KIND, outputs))

    assert deleted.state == OperationState.SUCCEEDED, deleted.error_message
    assert set(StorageVolume.objects.filter(cluster=cluster).values_list("state", flat=True)) == {"deleted"}
    assert [pv.metadata.name for pv in core.list_persistent_volume().items] == ["someone-elses"]
    assert core.list_namespaced_persistent_volume_claim("team-vision").items == []
    assert aws.client("fsx", region=REGION).describe_file_systems()["FileSystems"] == []
    bucket = shared_bucket_name(REGION)
    assert aws.client("s3", region=REGION).head_bucket(Bucket=bucket)["ResponseMetadata"]["HTTPStatusCode"] == 200

    rerun = drive(start(cast, cluster, DELETE_KIND, outputs))
    assert rerun.state == OperationState.SUCCEEDED
    assert len(sandbox_requests(sandbox, "fsx:DeleteFileSystem")) == 1


def test_a_name_taken_by_someone_elses_volume_is_refused(sandbox, cast, ready, drive):
    cluster, _ = ready()
    aws.client("s3", region=REGION).create_bucket(Bucket="vision-datasets",
                                                  CreateBucketConfiguration={"LocationConstraint": REGION})
    core = core_of(cluster)
    core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name="team-vision")))
    volume = factories.storage_volume(cluster, "datasets", bucket="vision-datasets")
    squatter = storage.persistent_volume(volume)
    squatter.metadata.labels = {"owner": "someone-else"}
    core.create_persistent_volume(squatter)

    operation = drive(start(cast, cluster, storage.CREATE_KIND, volume_id=volume.pk))

    assert operation.state == OperationState.FAILED
    assert operation.error_code == "volume_name_taken"
    assert core.read_persistent_volume(volume.pv_name).metadata.labels == {"owner": "someone-else"}


@pytest.mark.parametrize(("capacity", "valid"), [(1200, True), (2400, True), (4800, True), (1000, False),
                                                 (3600, False), (0, False)])
def test_fsx_capacities_follow_the_persistent_2_rule(capacity, valid):
    assert (storage.fsx_capacity_error(capacity) is None) is valid
