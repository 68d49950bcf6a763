"""The submit form speaks in labels, not field names, and asks for environment variables in one format (issue 24,
item 11)."""

from __future__ import annotations

import re

from django.test import Client
from django.urls import reverse

from tests import factories
from training.views.recipe_form import label


def test_field_names_read_as_labels():
    assert label("gpus_per_node") == "GPUs per node"
    assert label("efa_per_node") == "EFA interfaces per node"
    assert label("env") == "Environment variables"
    assert label("max_replicas") == "Max replicas"


def test_the_submit_form_labels_its_fields_and_asks_for_name_equals_value_lines(cast, sandbox):
    cluster = factories.cluster(cast.team, "trainers")
    factories.instance_group(cluster, "workers", instance_type="ml.g5.12xlarge", current_count=1, target_count=1)
    browser = Client()
    browser.force_login(cast.operator)
    form = browser.get(reverse("training-job-submit"), {"recipe": "pytorch", "cluster": cluster.pk}).content.decode()
    labels = re.findall(r'<label for="id_cfg-[^"]+"[^>]*>([^<]+)', form)
    assert "GPUs per node" in labels and "Environment variables" in labels
    assert not [text for text in labels if "_" in text], labels
    env = re.search(r'data-field-name="env".*?</div>', form, re.S).group(0)
    assert "NAME=value" in env and "NAME: value" not in env
