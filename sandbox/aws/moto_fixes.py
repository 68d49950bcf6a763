"""Fixes to moto that the sandbox applies once, before serving (``apply()``).

**Whose account is this access key?** moto answers it on every request it serves by looking the key up in the IAM
backend of *every partition* of every account — and a lookup creates a partition's IAM backend when there is none.
For partitions nobody uses that backend is never kept, so each request built four or five IAM backends, each
loading AWS's ~1,600 managed policies (``MOTO_IAM_LOAD_MANAGED_POLICIES``): about 0.2 s apiece, close to a second
for a ``DescribeVpcs``. The fix looks only in IAM backends that exist; a key created through IAM lives in one of
them, and any other key belongs to the default account, as moto answers anyway.

**ModifyVpcEndpoint and the endpoint's routes.** moto records ``AddRouteTableIds`` of a gateway endpoint without
adding the endpoint's prefix-list route to those tables (and ``RemoveRouteTableIds`` without removing it), so a
later ``DeleteVpcEndpoints`` — which deletes the route from every table the endpoint lists — failed with
``InvalidRoute.NotFound`` on a table added that way. The fix adds and removes the routes with the tables, as EC2
does.

**What a reset costs.** Every test starts from an empty world, so moto builds its backends afresh on their first
use. An IAM backend parsed the whole managed-policy file and built ~1,600 policy objects each time (~0.4 s of CPU);
they are now built once per account and copied (a copy keeps the policy's id, as AWS's managed policies keep theirs,
and counts its own attachments). An EC2 backend loaded ~1,300 public AMIs, each with a snapshot and a volume
(~0.3 s): the product never reads an AMI (HyperPod and EKS node groups name AMI *types*), so the sandbox starts with
none (``MOTO_EC2_LOAD_DEFAULT_AMIS=false`` unless the environment says otherwise; docs/sandbox-aws.md).

**What an EKS CreateCluster costs.** moto checks the role ARN's partition against a new boto3 session's partition
list, which parses botocore's whole endpoint file (~0.1 s) on every CreateCluster and CreateNodegroup. The same check
now reads the partitions parsed once.

**EventBridge rules and their SQS targets.** moto sends an event to the targets of every rule whose pattern matches,
a DISABLED rule's included, and into any SQS queue whatever its policy. EventBridge skips a disabled rule, and can
deliver to a queue only when the queue's policy lets ``events.amazonaws.com`` send it the rule's events; otherwise
the event is dropped (``sandbox.aws.eventbridge.queue_accepts``, counted in ``failed_invocations``).

**CORS.** moto's server lets every origin call every service (``flask_cors`` on each backend app); S3 lets a
browser in only as the bucket's CORS configuration says, which ``sandbox.aws.s3_cors`` enforces, so the global one
is off.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from typing import Any

import boto3
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models.vpcs import VPCBackend
from moto.eks import models as eks_models
from moto.eks.exceptions import InvalidParameterException
from moto.events import models as events_models
from moto.iam import models as iam_models
from moto.moto_server import werkzeug_app

_modify_vpc_endpoint = VPCBackend.modify_vpc_endpoint
_send_to_targets = events_models.Rule.send_to_targets
_send_to_sqs_queue = events_models.Rule._send_to_sqs_queue
_init_aws_policies = iam_models.IAMBackend._init_aws_policies
_managed_policies: dict[tuple[str, str], list[iam_models.ManagedPolicy]] = {}


def account_of_access_key(access_key: str) -> str:
    """The account whose IAM created ``access_key``, else moto's default account — creating no backend."""
    for account_id, account in list(iam_models.iam_backends.items()):
        for backend in list(dict.values(account)):
            if access_key in backend.access_keys:
                return account_id
    return DEFAULT_ACCOUNT_ID


def modify_vpc_endpoint(self: Any, vpc_id: str, policy_doc: str, add_subnets: Any, remove_subnets: Any,
                        remove_route_tables: list[str] | None, add_route_tables: list[str] | None,
                        add_security_groups: Any, remove_security_groups: Any) -> None:
    """moto's ModifyVpcEndpoint, then the prefix-list route of a gateway endpoint added to the route tables it gained
    and removed from those it lost."""
    endpoint = self.describe_vpc_endpoints(vpc_end_point_ids=[vpc_id])[0]
    before = set(endpoint.route_table_ids or [])
    _modify_vpc_endpoint(self, vpc_id, policy_doc, add_subnets, remove_subnets, remove_route_tables,
                         add_route_tables, add_security_groups, remove_security_groups)
    prefix_list = endpoint.destination_prefix_list_id
    if not prefix_list:
        return
    after = set(endpoint.route_table_ids or [])
    for table_id in sorted(after - before):
        self.create_route(table_id, None, gateway_id=endpoint.id, destination_prefix_list_id=prefix_list)
    for table_id in sorted(before - after):
        self.delete_route(table_id, prefix_list)


def aws_managed_policies(self: Any) -> list[iam_models.ManagedPolicy]:
    """AWS's managed policies for a new IAM backend: copies of the ones built for its account and partition the first
    time. A copy has its own attachment count, tags and version list; the versions' documents are shared (AWS refuses
    changes to its own policies)."""
    key = (self.account_id, self.region_name)
    if key not in _managed_policies:
        _managed_policies[key] = _init_aws_policies(self)
    fresh = []
    for policy in _managed_policies[key]:
        twin = copy.copy(policy)
        twin.tags, twin.versions = dict(policy.tags), list(policy.versions)
        fresh.append(twin)
    return fresh


_ROLE_ARN = re.compile(r"arn:(?P<partition>.+):iam::(?P<account_id>[0-9]{12}):role/.+")


@functools.cache
def _partitions() -> frozenset[str]:
    return frozenset(boto3.session.Session().get_available_partitions())


def validate_role_arn(arn: str) -> None:
    """moto's EKS role check (an IAM role ARN of a known partition, else ``InvalidParameterException``), with the
    partitions read once."""
    match = _ROLE_ARN.match(arn or "")
    if match is None or match.group("partition") not in _partitions():
        raise InvalidParameterException(message=f"Invalid Role Arn: '{arn}'")


def send_to_targets(self: Any, original_event: Any, transform_input: bool = True) -> None:
    """moto's delivery, for an ENABLED rule only."""
    if self.state == "ENABLED":
        _send_to_targets(self, original_event, transform_input)


def send_to_sqs_queue(self: Any, resource_id: str, event: dict[str, Any], group_id: str | None = None) -> None:
    """moto's delivery to a queue, when the queue's policy lets EventBridge send it this rule's events."""
    from moto.sqs.exceptions import QueueDoesNotExist
    from moto.sqs.models import sqs_backends

    from sandbox.aws import core, eventbridge

    with core.moto_lock("sqs"):  # an SQS request (a receive) may be changing the queue meanwhile
        try:
            queue = sqs_backends[self.account_id][self.region_name].get_queue(resource_id)
        except QueueDoesNotExist:  # the queue is gone: EventBridge fails the invocation
            eventbridge.failed_invocations[self.arn] += 1
            return
        if not eventbridge.queue_accepts(queue.policy, queue.queue_arn, self.arn):
            eventbridge.failed_invocations[self.arn] += 1
            return
        _send_to_sqs_queue(self, resource_id, event, group_id)


def apply() -> None:
    """Install the fixes (idempotent). ``moto.core.responses`` imports the lookup at call time, so replacing the
    module attribute is enough; the backends' methods are looked up on their classes at call time too."""
    os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
    iam_models.get_account_id_from = account_of_access_key
    iam_models.IAMBackend._init_aws_policies = aws_managed_policies  # type: ignore[method-assign]
    VPCBackend.modify_vpc_endpoint = modify_vpc_endpoint  # type: ignore[method-assign]
    eks_models.validate_role_arn = validate_role_arn
    werkzeug_app.DISABLE_GLOBAL_CORS = True
    events_models.Rule.send_to_targets = send_to_targets  # type: ignore[method-assign]
    events_models.Rule._send_to_sqs_queue = send_to_sqs_queue  # type: ignore[method-assign]
