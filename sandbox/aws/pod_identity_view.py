"""EKS Pod Identity as the simulator sees it (read-only, in-process, like ``sandbox.aws.world``): whether the pods
of a service account get AWS credentials.

A pod gets them when the cluster has an association for its namespace and service account and the EKS Pod Identity
Agent add-on — the node-local endpoint that hands them out — is ACTIVE (or UPDATING).
"""

from __future__ import annotations

from sandbox.aws import core, eks_model

AGENT = "eks-pod-identity-agent"
SERVING = ("ACTIVE", "UPDATING")


def credentials_for(region: str, cluster: str, namespace: str, service_account: str) -> str:
    """``""`` when pods of ``namespace/service_account`` on EKS cluster ``cluster`` get credentials, else why not."""
    with core.transaction():
        eks_model.refresh()
        found = eks_model.find(region, cluster)
        if found is None:
            return f"no EKS cluster {cluster}"
        agent = found.addons.get(AGENT)
        if agent is None or agent.status not in SERVING:
            return f"the {AGENT} add-on does not run"
        if not any(association.namespace == namespace and association.service_account == service_account
                   for association in found.pod_identities.values()):
            return f"no EKS Pod Identity association for {namespace}/{service_account}"
        return ""
