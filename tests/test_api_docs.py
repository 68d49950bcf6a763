"""``docs/api.md``'s endpoint table is the OpenAPI description's operations, no more and no fewer."""

from __future__ import annotations

import re
from pathlib import Path

from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator

API_DOC = Path(__file__).resolve().parent.parent / "docs" / "api.md"
ROW = re.compile(r"^\| `([a-z_]+)` \| `([A-Z]+)` \| `(/[^`]*)` \|$")
METHODS = ("get", "post", "put", "patch", "delete")


def schema_rows() -> list[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [f"| `{operation['operationId']}` | `{method.upper()}` | `{path}` |"
            for path, operations in schema["paths"].items()
            for method, operation in operations.items() if method in METHODS]


def documented_rows() -> list[str]:
    section = API_DOC.read_text().split("\n## Endpoints\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if ROW.match(line)]


def test_the_endpoint_table_is_the_openapi_operations():
    expected = schema_rows()
    assert documented_rows() == expected, (
        "docs/api.md's endpoint table differs from /api/schema/; paste this table under '## Endpoints':\n"
        + "\n".join(["| operation | method | path |", "|---|---|---|", *expected]))


def test_the_openapi_description_is_generated_without_warnings(tmp_path):
    """No enum name collisions (``ENUM_NAME_OVERRIDES`` names every shared choice set) and no view the generator
    cannot read: drf-spectacular would print them on every start."""
    call_command("spectacular", "--fail-on-warn", "--file", str(tmp_path / "schema.yml"))
