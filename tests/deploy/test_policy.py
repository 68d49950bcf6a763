"""InstantStart's IAM policy equals its code's AWS call inventory (deploy/inventory.py, deploy/policy.py).

The inventory is read from the source; the committed JSON policy and the CloudFormation template's policy must be
what ``python -m deploy.policy`` builds from it, with no action missing and none extra. moto's IAM policy evaluation
then shows the policy allows every call the product makes and denies others.
"""

from __future__ import annotations

import json
import textwrap

import pytest
from moto.iam.access_control import IAMPolicy, PermissionResult

from deploy import inventory, policy
from deploy.inventory import ApiCall
from tests.deploy.test_cloudformation import template

ACCOUNT = "123456789012"
OURS = {f"aws:RequestTag/{policy.MANAGED_BY_TAG}": policy.MANAGED_BY,
        f"aws:ResourceTag/{policy.MANAGED_BY_TAG}": policy.MANAGED_BY}


@pytest.fixture(scope="module")
def read() -> inventory.Inventory:
    return inventory.read_inventory()


@pytest.fixture(scope="module")
def calls(read) -> set[ApiCall]:
    return read.calls


@pytest.fixture(scope="module")
def document(calls) -> dict:
    return policy.policy(calls, partition="aws", account=ACCOUNT)


def _actions(document: dict) -> list[str]:
    return [action for statement in document["Statement"] for action in statement["Action"]]


def test_the_inventory_reads_the_calls_the_product_makes(calls):
    assert {ApiCall("sagemaker", "CreateCluster"), ApiCall("eks", "DescribeCluster"),
            ApiCall("sts", "GetCallerIdentity"),
            ApiCall("eks", "ListNodegroups"),  # a paginator
            ApiCall("sagemaker", "BatchRebootClusterNodes"),  # getattr(client, method) over a table of names
            ApiCall("service-quotas", "ListServiceQuotas"),  # get_paginator(operation) over a loop's names
            ApiCall("sagemaker-mlflow", "GetRun")} <= calls  # the MLflow REST gateway
    assert not any(call.service in ("cloudformation", "ssm") for call in calls)  # the sandbox and tests are not read


def test_every_translated_block_names_a_call_in_the_inventory(read):
    """``aws.translated("<service>", "<Operation>")`` wraps a call: a call the reader missed shows up here."""
    assert len(read.translated) > 30
    assert read.translated - read.calls == set()


def test_the_reader_follows_clients_through_names_factories_and_parameters(tmp_path):
    package = tmp_path / "product"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "gateway.py").write_text(textwrap.dedent('''
        from cloud import aws
        def _eks(region):
            return aws.client("eks", region=region)
        def nodes(sagemaker, name):
            return sagemaker.list_cluster_nodes(ClusterName=name)
        def roles(ctx, client=None):
            iam = client or ctx.client("iam")
            for page in iam.get_paginator("list_roles").paginate():
                pass
        def tags(region):
            return _eks(region).list_tags_for_resource(resourceArn="arn")
        def wait(eks: BaseClient, s3):
            eks.get_waiter("nodegroup_active").wait(clusterName="c", nodegroupName="n")
            return s3.generate_presigned_url("get_object", Params={})
    '''))
    (package / "user.py").write_text(textwrap.dedent('''
        from product import gateway
        def go(region):
            gateway._eks(region).describe_cluster(name="x")
            ec2 = object()
            ec2.describe_vpcs()
    '''))
    assert inventory.read_inventory(tmp_path).calls == {
        ApiCall("eks", "DescribeCluster"), ApiCall("eks", "ListTagsForResource"),
        ApiCall("sagemaker", "ListClusterNodes"), ApiCall("iam", "ListRoles"), ApiCall("eks", "DescribeNodegroup"),
        ApiCall("s3", "GetObject")}


def test_an_unknown_client_method_fails_loudly(tmp_path):
    package = tmp_path / "product"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "bad.py").write_text('def go(ctx):\n    ctx.client("eks").describe_clusterz(name="x")\n')
    with pytest.raises(inventory.UnknownClientCall, match="describe_clusterz"):
        inventory.read_inventory(tmp_path)


def test_the_policy_lists_exactly_the_actions_the_code_needs(calls, document):
    actions = _actions(document)
    assert sorted(actions) == sorted(set(actions)), "an action is in two statements"
    assert set(actions) == policy.required_actions(calls)
    assert {"eks:DescribeCluster", "sagemaker:CreateCluster", "s3:ListBucket", "aps:CreateWorkspace",
            "servicequotas:ListServiceQuotas", "sagemaker-mlflow:GetRun", "iam:PassRole", "ec2:CreateTags",
            "iam:TagRole", "sagemaker:AddTags"} <= set(actions)


def test_no_wildcard_action_and_every_wildcard_resource_is_justified(calls, document):
    assert not [action for action in _actions(document) if "*" in action]
    reasons = {rule.sid: rule.why for rule, _ in policy.statements(calls)}
    unjustified = [statement["Sid"] for statement in document["Statement"]
                   if "*" in statement["Resource"] and not reasons[statement["Sid"]]]
    assert unjustified == []
    passing = next(statement for statement in document["Statement"] if statement["Action"] == ["iam:PassRole"])
    assert passing["Resource"] == [f"arn:aws:iam::{ACCOUNT}:role/instantstart-*"]
    assert passing["Condition"]["StringEquals"]["iam:PassedToService"]


def test_the_committed_json_and_template_are_what_the_code_builds(calls):
    assert policy.POLICY_FILE.read_text() == policy.render_json(calls), "run: python -m deploy.policy"
    text = policy.TEMPLATE_FILE.read_text()
    assert policy.render_template(text, calls) == text, "run: python -m deploy.policy"
    generated = template()["Resources"]["HostRole"]["Properties"]["Policies"][0]["PolicyDocument"]
    assert [statement["Action"] for statement in generated["Statement"]] == [
        statement["Action"] for statement in policy.policy(calls, partition="aws", account=ACCOUNT)["Statement"]]


def _allowed(document: dict, action: str, resource: str, **context: str) -> bool:
    return IAMPolicy(json.dumps(document)).is_action_permitted(
        action, resource, incoming_condition_values={**OURS, **context}) == PermissionResult.PERMITTED


def test_the_simulated_role_allows_every_call_the_product_makes(calls, document):
    resources = {statement["Sid"]: statement["Resource"][0] for statement in document["Statement"]}
    denied = []
    for rule, actions in policy.statements(calls):
        resource = resources[rule.sid].replace("*", "x")
        context = {"iam:PassedToService": "sagemaker.amazonaws.com", "iam:AWSServiceName": "eks.amazonaws.com",
                   "ec2:CreateAction": "CreateVpc", "s3:ResourceAccount": ACCOUNT}
        denied += [action for action in actions if not _allowed(document, action, resource, **context)]
    assert denied == []


@pytest.mark.parametrize(("action", "resource", "context"), [
    ("ec2:RunInstances", "arn:aws:ec2:us-west-2:123456789012:instance/i-1", {}),
    ("iam:CreateUser", "arn:aws:iam::123456789012:user/mallory", {}),
    ("iam:PutRolePolicy", "arn:aws:iam::123456789012:role/InstantStartHost-us-west-2", {}),
    ("iam:PassRole", "arn:aws:iam::123456789012:role/Admin", {"iam:PassedToService": "sagemaker.amazonaws.com"}),
    ("iam:PassRole", "arn:aws:iam::123456789012:role/instantstart-7-eks", {"iam:PassedToService": "ec2.amazonaws.com"}),
    ("eks:DeleteCluster", "arn:aws:eks:us-west-2:123456789012:cluster/theirs",
     {f"aws:ResourceTag/{policy.MANAGED_BY_TAG}": "someone-else"}),
    ("ec2:DeleteVpc", "arn:aws:ec2:us-west-2:123456789012:vpc/vpc-1",
     {f"aws:ResourceTag/{policy.MANAGED_BY_TAG}": "someone-else"}),
    ("s3:DeleteBucket", "arn:aws:s3:::someone-elses-bucket", {}),
    ("s3:GetObject", "arn:aws:s3:::payroll/2026.csv", {}),
    ("sagemaker:CreateCluster", "arn:aws:sagemaker:us-west-2:123456789012:cluster/x",
     {f"aws:RequestTag/{policy.MANAGED_BY_TAG}": "untagged"}),
    ("eks:DescribeCluster", "arn:aws:eks:us-west-2:999999999999:cluster/another-account", {}),
    ("secretsmanager:GetSecretValue", "arn:aws:secretsmanager:us-west-2:123456789012:secret:db", {}),
])
def test_the_simulated_role_denies_what_the_product_never_does(document, action, resource, context):
    assert not _allowed(document, action, resource, **context)
