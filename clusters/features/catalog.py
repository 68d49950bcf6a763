"""The features of the "Advanced features" panel, in the order an operation works on them.

``prerequisites`` are cluster dependencies (``clusters.dependencies`` components, plus ``metrics-server``) that must
be ACTIVE before the feature is enabled; the operation's *prerequisites* phase installs the absent ones first.
``brings`` are features of this catalog a feature needs on (the inference operator: the AWS Load Balancer
Controller, whose role AWS's add-on setup asks for, for the operator's load balancers): enabling the feature enables
them in the same operation when they are off, and disabling it disables those it brought
(``clusters.features.services``).
"""

from __future__ import annotations

from dataclasses import dataclass

from clusters.dependencies import POD_IDENTITY_AGENT

CERT_MANAGER = "cert-manager"
S3_CSI = "aws-mountpoint-s3-csi-driver"
FSX_CSI = "aws-fsx-csi-driver"
METRICS_SERVER = "metrics-server"

TRAINING_OPERATOR = "training_operator"
INFERENCE_OPERATOR = "inference_operator"
OBSERVABILITY = "observability"
TIERED_CHECKPOINTING = "tiered_checkpointing"
AUTOSCALING = "autoscaling"
LOAD_BALANCER_CONTROLLER = "load_balancer_controller"
TASK_GOVERNANCE = "task_governance"

#: Tiered checkpointing: the share of each instance's memory HyperPod sets aside, when none is given.
DEFAULT_MEMORY_PERCENTAGE = 20
MEMORY_PERCENTAGE_RANGE = (1, 100)


@dataclass(frozen=True)
class Feature:
    slug: str
    title: str
    description: str
    prerequisites: tuple[str, ...] = ()
    #: the EKS add-on the feature is, if it is one
    addon: str = ""
    #: whether it needs the cluster's HyperPod cluster (UpdateCluster settings)
    needs_hyperpod: bool = False
    #: features enabled in the same operation when they are off (and turned off with it when it brought them)
    brings: tuple[str, ...] = ()


CATALOG: tuple[Feature, ...] = (
    Feature(TRAINING_OPERATOR, "HyperPod training operator",
            "Runs HyperPodPyTorchJob with process-level recovery, hang and straggler detection.",
            prerequisites=(POD_IDENTITY_AGENT, CERT_MANAGER), addon="amazon-sagemaker-hyperpod-training-operator"),
    Feature(INFERENCE_OPERATOR, "HyperPod inference operator",
            "Deploys models from S3, FSx or JumpStart as autoscaled endpoints on the cluster.",
            prerequisites=(POD_IDENTITY_AGENT, CERT_MANAGER, S3_CSI, FSX_CSI, METRICS_SERVER),
            addon="amazon-sagemaker-hyperpod-inference", brings=(LOAD_BALANCER_CONTROLLER,)),
    Feature(OBSERVABILITY, "HyperPod observability",
            "Cluster, GPU and job metrics in an Amazon Managed Service for Prometheus workspace (billed separately).",
            prerequisites=(POD_IDENTITY_AGENT,), addon="amazon-sagemaker-hyperpod-observability"),
    Feature(TIERED_CHECKPOINTING, "Managed tiered checkpointing",
            "Checkpoints to instance memory first, then to the team's checkpoints/ prefix of the shared bucket.",
            needs_hyperpod=True),
    Feature(AUTOSCALING, "Managed autoscaling (Karpenter)",
            "Scales HyperPod instance groups from zero for pending pods. It manages HyperPod instance groups only, "
            "not general EC2 capacity.", needs_hyperpod=True),
    Feature(LOAD_BALANCER_CONTROLLER, "AWS Load Balancer Controller",
            "Makes the Network Load Balancers of endpoints exposed through a load balancer (internal or "
            "internet-facing); its IAM role is given through EKS Pod Identity.",
            prerequisites=(POD_IDENTITY_AGENT,)),
    Feature(TASK_GOVERNANCE, "HyperPod task governance",
            "Kueue queues, compute quotas and priorities for the teams sharing the cluster; its scheduler config and "
            "quotas are set on the cluster's Governance tab.",
            addon="amazon-sagemaker-hyperpod-taskgovernance", needs_hyperpod=True),
)
FEATURES = {feature.slug: feature for feature in CATALOG}
ORDER = tuple(feature.slug for feature in CATALOG)
