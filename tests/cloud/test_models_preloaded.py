"""A Celery worker reads the AWS service models before it forks its pool (``cloud.aws.preload_models``): every
service the product calls must be in ``cloud.aws.SERVICES``, or each pool process parses its model on first use."""

from __future__ import annotations

import re

from cloud import aws
from tests.test_layout import ROOT

PRODUCT = ("accounts", "cloud", "clusters", "config", "costs", "governance", "inference", "notifications",
           "operations", "spending", "training")
CALL = re.compile(r"""client\(\s*["']([a-z0-9-]+)["']""")


def test_every_service_the_product_calls_is_read_before_the_pool_forks():
    called = {service for package in PRODUCT for path in (ROOT / package).rglob("*.py")
              for service in CALL.findall(path.read_text())}
    assert called, "no client(...) call found: the pattern no longer matches the code"
    assert called <= set(aws.SERVICES), sorted(called - set(aws.SERVICES))


def test_after_the_preload_a_client_of_each_service_parses_no_model():
    aws.preload_models()
    files = aws._service_model_loader().file_loader  # botocore's reader of model files, behind its cache
    parsed = []
    original = files.load_file

    def reading(path, *args, **kwargs):
        parsed.append(path)
        return original(path, *args, **kwargs)

    files.load_file = reading
    try:
        for service in aws.SERVICES:
            aws.session(region="eu-west-1").client(service, config=aws.client_config())
    finally:
        del files.load_file
    assert parsed == []
