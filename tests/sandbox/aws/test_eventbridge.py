"""The sandbox's services send their state changes to EventBridge, and EventBridge delivers to SQS only as AWS does."""

from __future__ import annotations

import json
import time
from typing import Any

from sandbox.aws import eventbridge
from tests.sandbox.aws.helpers import make_eks_cluster, make_hyperpod, wait_for

PATTERN = {"source": ["aws.eks", "aws.sagemaker"]}


def channel(client, name: str = "changes", *, policy: bool = True, rule_state: str = "ENABLED") -> tuple[str, str]:
    """A rule matching EKS and SageMaker events, sending them to a queue; returns (queue URL, rule ARN)."""
    events, sqs = client("events"), client("sqs")
    rule_arn = events.put_rule(Name=name, EventPattern=json.dumps(PATTERN), State=rule_state)["RuleArn"]
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    if policy:
        sqs.set_queue_attributes(QueueUrl=url, Attributes={"Policy": json.dumps({"Statement": [{
            "Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"}, "Action": "sqs:SendMessage",
            "Resource": queue_arn, "Condition": {"ArnEquals": {"aws:SourceArn": rule_arn}}}]})})
    events.put_targets(Rule=name, Targets=[{"Id": "queue", "Arn": queue_arn}])
    return url, rule_arn


def drain(sqs, url: str) -> list[dict[str, Any]]:
    bodies = []
    while messages := sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
        bodies += [json.loads(message["Body"]) for message in messages]
        sqs.delete_message_batch(QueueUrl=url, Entries=[{"Id": str(n), "ReceiptHandle": m["ReceiptHandle"]}
                                                        for n, m in enumerate(messages)])
    return bodies


def test_an_addon_that_becomes_active_is_announced_with_its_arn(client):
    eks, sqs = client("eks"), client("sqs")
    url, _ = channel(client)
    make_eks_cluster(client)
    arn = eks.create_addon(clusterName="demo", addonName="eks-pod-identity-agent")["addon"]["addonArn"]
    wait_for(lambda: eks.describe_addon(clusterName="demo", addonName="eks-pod-identity-agent")["addon"]["status"],
             lambda status: status == "ACTIVE")
    (event,) = wait_for(lambda: drain(sqs, url), bool)
    assert (event["source"], event["detail-type"], event["resources"]) == (
        "aws.eks", "EKS Addon Creation Succeeded", [arn])
    assert event["detail"]["addonName"] == "eks-pod-identity-agent" and event["detail"]["clusterName"] == "demo"
    eks.delete_addon(clusterName="demo", addonName="eks-pod-identity-agent")
    (gone,) = wait_for(lambda: drain(sqs, url), bool)
    assert (gone["detail-type"], gone["resources"]) == ("EKS Addon Deletion Succeeded", [arn])


def test_a_failed_addon_is_announced_as_failed(client):
    eks, sqs = client("eks"), client("sqs")
    url, _ = channel(client)
    make_eks_cluster(client)
    eks.create_addon(clusterName="demo", addonName="amazon-sagemaker-hyperpod-training-operator")  # no cert-manager
    (event,) = wait_for(lambda: drain(sqs, url), bool)
    assert event["detail-type"] == "EKS Addon Creation Failed" and event["detail"]["status"] == "CREATE_FAILED"


def test_without_the_queue_policy_eventbridge_cannot_deliver(client):
    eks, sqs = client("eks"), client("sqs")
    url, rule_arn = channel(client, policy=False)
    make_eks_cluster(client)
    eks.create_addon(clusterName="demo", addonName="eks-pod-identity-agent")
    wait_for(lambda: eventbridge.failed_invocations[rule_arn], bool)
    assert drain(sqs, url) == []


def test_a_disabled_rule_delivers_nothing(client):
    eks, sqs = client("eks"), client("sqs")
    url, _ = channel(client, rule_state="DISABLED")
    make_eks_cluster(client)
    eks.create_addon(clusterName="demo", addonName="eks-pod-identity-agent")
    wait_for(lambda: eks.describe_addon(clusterName="demo", addonName="eks-pod-identity-agent")["addon"]["status"],
             lambda status: status == "ACTIVE")
    time.sleep(0.3)  # the ticker has run: an event would have been sent by now
    assert drain(sqs, url) == []


def test_a_hyperpod_cluster_announces_each_status_change(client):
    sagemaker, sqs = client("sagemaker"), client("sqs")
    url, _ = channel(client)
    arn = make_hyperpod(client)["ClusterArn"]
    sagemaker.delete_cluster(ClusterName="hp")
    events = wait_for(lambda: drain(sqs, url), lambda bodies: len(bodies) >= 1)
    events += drain(sqs, url)
    assert [(e["detail-type"], e["resources"], e["detail"]["ClusterStatus"]) for e in events] == [
        ("SageMaker HyperPod Cluster State Change", [arn], "InService"),
        ("SageMaker HyperPod Cluster State Change", [arn], "Deleting")]
