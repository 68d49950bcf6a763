"""The channel that brings AWS's state-change events to InstantStart: an EventBridge rule sending to an SQS queue.

One channel per region; the rule and the queue share the caller's name (two installations sharing an account and
region need different names). :func:`ensure` makes it or brings it back to this shape, idempotently:

- the rule, on the default event bus, matches :data:`DETAIL_TYPES` of their sources (``PutRule`` replaces);
- the queue keeps an event an hour (the engine's safety polls cover anything older) and its policy lets EventBridge
  send it this rule's events and nothing else — without that policy EventBridge drops every event;
- the queue is the rule's target ``instantstart`` (``PutTargets`` updates a target of the same id in place).

:func:`receive` takes up to ten events off the queue without waiting (a short poll); :func:`delete` removes handled
ones, :func:`retry_soon` makes one visible again after a second. Errors are ``ClientError``/``BotoCoreError``, for the
caller to judge.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from cloud import aws

#: The events InstantStart waits for, by source (AWS's EventBridge event reference).
DETAIL_TYPES = {
    "aws.eks": ("EKS Addon Creation Succeeded", "EKS Addon Creation Failed", "EKS Addon Update Succeeded",
                "EKS Addon Update Failed", "EKS Addon Deletion Succeeded", "EKS Addon Deletion Failed",
                "EKS Addon Health Degraded"),
    "aws.sagemaker": ("SageMaker HyperPod Cluster State Change",),
}
RETENTION_SECONDS = 3600


@dataclass(frozen=True)
class Event:
    """One event off the queue: the ARNs it names, its type and detail, and the receipt handle that deletes it."""

    resources: tuple[str, ...]
    detail_type: str
    receipt: str
    detail: dict[str, Any] = field(default_factory=dict)


def ensure(region: str, name: str) -> str:
    """Make (or repair) the region's channel called ``name``; return the queue's URL."""
    pattern = {"source": sorted(DETAIL_TYPES), "detail-type": sorted({t for ts in DETAIL_TYPES.values() for t in ts})}
    rule_arn = aws.client("events", region=region).put_rule(
        Name=name, EventPattern=json.dumps(pattern), State="ENABLED",
        Description="State changes of the AWS resources InstantStart operations wait for")["RuleArn"]
    account = rule_arn.split(":")[4]
    queue_arn = f"arn:{aws.partition(region)}:sqs:{region}:{account}:{name}"
    attributes = {"MessageRetentionPeriod": str(RETENTION_SECONDS), "Policy": json.dumps(_policy(queue_arn, rule_arn))}
    sqs = aws.client("sqs", region=region)
    try:
        url: str = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    except sqs.exceptions.QueueNameExists:  # made earlier with other attributes: bring them back
        url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
        sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)
    aws.client("events", region=region).put_targets(Rule=name, Targets=[{"Id": "instantstart", "Arn": queue_arn}])
    return url


def receive(region: str, queue_url: str) -> list[Event]:
    """Up to ten events, without waiting for any."""
    messages = aws.client("sqs", region=region).receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0).get("Messages", [])
    return [_event(message) for message in messages]


def delete(region: str, queue_url: str, events: list[Event]) -> None:
    if events:
        aws.client("sqs", region=region).delete_message_batch(QueueUrl=queue_url, Entries=[
            {"Id": str(index), "ReceiptHandle": event.receipt} for index, event in enumerate(events)])


def retry_soon(region: str, queue_url: str, event: Event) -> None:
    """Let the queue hand ``event`` out again in a second (its operation was busy)."""
    aws.client("sqs", region=region).change_message_visibility(
        QueueUrl=queue_url, ReceiptHandle=event.receipt, VisibilityTimeout=1)


def _event(message: dict[str, Any]) -> Event:
    try:
        body = json.loads(message.get("Body", ""))
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    resources, detail = body.get("resources"), body.get("detail")
    return Event(resources=tuple(r for r in resources if isinstance(r, str)) if isinstance(resources, list) else (),
                 detail_type=str(body.get("detail-type", "")), receipt=message["ReceiptHandle"],
                 detail=detail if isinstance(detail, dict) else {})


def _policy(queue_arn: str, rule_arn: str) -> dict[str, Any]:
    return {"Version": "2012-10-17", "Statement": [{
        "Sid": "EventBridgeSendsTheRulesEvents", "Effect": "Allow",
        "Principal": {"Service": "events.amazonaws.com"}, "Action": "sqs:SendMessage", "Resource": queue_arn,
        "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}}}]}
