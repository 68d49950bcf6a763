"""Read-only inspection of AWS: the source of every choice the portal, REST and MCP offer, and of the
checks preflight makes. Nothing here mutates anything.

- :mod:`~clusters.inspection.catalog` — regions, availability zones, HyperPod instance types offered per zone;
- :mod:`~clusters.inspection.capacity` — cluster-usage quotas, HyperPod usage, training plans;
- :mod:`~clusters.inspection.facts` — one EKS cluster and its HyperPod cluster;
- :mod:`~clusters.inspection.network` — a VPC, its subnets (with guessed roles) and gateways;
- :mod:`~clusters.inspection.candidates` — EKS clusters that could be imported.
"""

from clusters.inspection.candidates import ImportCandidate, import_candidates
from clusters.inspection.capacity import Quota, TrainingPlanInfo, quotas, training_plans
from clusters.inspection.catalog import (
    InstanceTypeOffer,
    Zone,
    availability_zones,
    hyperpod_instance_types,
    instance_types,
    regions,
)

__all__ = [
    "ImportCandidate",
    "InstanceTypeOffer",
    "Quota",
    "TrainingPlanInfo",
    "Zone",
    "availability_zones",
    "hyperpod_instance_types",
    "import_candidates",
    "instance_types",
    "quotas",
    "regions",
    "training_plans",
]
