"""What the state of a cluster, an instance group or a volume allows now: the state half of their ``capabilities``
(``access.capabilities(actor, obj, actions, state_allows)``; ``access.can`` is the permission half).

Each rule is the one the service enforces with a 409, so the portal and REST clients are offered an action only when
its state would let it through; an action a rule does not name is allowed by the state. The portal's templates ask
only ``capabilities``, never the state.
"""

from __future__ import annotations

from clusters import actions
from clusters.instance_groups.services import DELETING as GROUP_DELETING
from clusters.models import Cluster, ClusterState, InstanceGroup, StorageState, StorageVolume
from clusters.node_groups import live as node_groups

#: Volumes that may be removed (``volume_busy`` while creating, ``volume_deleted`` once deleting or deleted).
REMOVABLE_VOLUME_STATES = frozenset({StorageState.AVAILABLE, StorageState.FAILED})


def cluster_allows(action: str, cluster: Cluster) -> bool:
    """Groups and volumes are added to an active cluster only (``cluster_not_active``); a deleting or deleted cluster
    cannot become the active one, a deleted one is not refreshed (``cluster_deleted``); a cluster that is being
    created, imported or deleted is not deleted (``cluster_busy``)."""
    if action in (actions.INSTANCE_GROUP_CREATE, actions.STORAGE_CREATE):
        return cluster.state == ClusterState.ACTIVE
    if action == actions.CLUSTER_ACTIVATE:
        return cluster.state not in (ClusterState.DELETING, ClusterState.DELETED)
    if action == actions.CLUSTER_REFRESH:
        return cluster.state != ClusterState.DELETED
    if action == actions.CLUSTER_DELETE:
        return cluster.state != ClusterState.DELETED and not cluster.is_busy
    return True


def group_allows(action: str, group: InstanceGroup) -> bool:
    """A group changes and is deleted only while its cluster is active (``cluster_not_active``) and HyperPod is not
    deleting it (``instance_group_deleting``)."""
    if action in (actions.INSTANCE_GROUP_UPDATE, actions.INSTANCE_GROUP_DELETE):
        return group.cluster.state == ClusterState.ACTIVE and group.status != GROUP_DELETING
    return True


def node_group_allows(action: str, group: node_groups.NodeGroup) -> bool:
    """A node group is scaled or deleted only while its cluster is active (``cluster_not_active``) and EKS is not
    busy with it (``node_group_busy``); the system node group is never deleted alone (``system_node_group``)."""
    if action == actions.NODE_GROUP_SCALE:
        return group.cluster.state == ClusterState.ACTIVE and group.status in node_groups.SCALABLE
    if action == actions.NODE_GROUP_DELETE:
        return (group.cluster.state == ClusterState.ACTIVE and group.status in node_groups.DELETABLE
                and not group.system)
    return True


def volume_allows(action: str, volume: StorageVolume) -> bool:
    """A volume is removed once it is available or has failed, not while it is created or deleted."""
    if action == actions.STORAGE_DELETE:
        return volume.state in REMOVABLE_VOLUME_STATES
    return True
