"""The wire: which operation a request is, its parameters, and responses and errors in the service's protocol.

``identify`` reads the SigV4 credential scope (region and signing name) and lets moto's botocore-model router
find the operation, so every request, whether an extension answers it or moto does, has a key such as
``sagemaker:CreateCluster`` for faults and the request log. Parameters are parsed and results serialized with
moto's model-driven parsers and serializers; errors are rendered here in each protocol's error shape
(JSON ``__type``/``x-amzn-ErrorType``, query ``ErrorResponse``, EC2 ``Response/Errors``, REST-XML ``Error``).
"""

from __future__ import annotations

import datetime
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from moto.core.model import OperationModel
from moto.core.parse import PROTOCOL_PARSERS
from moto.core.request import Request, determine_request_protocol
from moto.core.routing import get_service_router
from moto.core.serialize import DefaultAttributePicker, get_serializer_class
from moto.core.utils import get_service_model

from sandbox.aws.core import ApiError, new_uuid

# SigV4 signing names that differ from botocore's service name.
SIGNING_NAMES = {
    "servicequotas": "service-quotas",
    "monitoring": "cloudwatch",
    "email": "ses",
    "states": "stepfunctions",
    "elasticfilesystem": "efs",
    "elasticloadbalancing": "elbv2",
    "elasticmapreduce": "emr",
    "aps": "amp",
    "es": "opensearch",
    "execute-api": "apigatewaymanagementapi",
}

READ_ONLY_PREFIXES = ("Describe", "List", "Get", "Search", "Head", "Lookup", "Query", "Scan", "Select", "Check",
                      "Preview", "Estimate", "Validate", "BatchGet", "BatchDescribe")

_CREDENTIAL = re.compile(r"Credential=([^/,\s]+)/[^/]+/([^/]+)/([^/]+)/aws4_request")


@dataclass
class Target:
    """What a request addresses. ``operation`` is ``""`` when the router could not tell."""

    service: str
    region: str
    access_key: str
    operation: str = ""
    protocol: str = "json"
    operation_model: OperationModel | None = None
    uri_params: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.service}:{self.operation or '*'}"

    @property
    def mutating(self) -> bool:
        return bool(self.operation) and not self.operation.startswith(READ_ONLY_PREFIXES)


def moto_request(environ: dict[str, Any], body: bytes) -> Request:
    """A fresh moto ``Request`` over a copy of ``environ`` whose input is ``body``."""
    copy = dict(environ)
    copy["wsgi.input"] = io.BytesIO(body)
    copy["CONTENT_LENGTH"] = str(len(body))
    return Request(copy)


def _service_name(signing_name: str) -> str | None:
    name = SIGNING_NAMES.get(signing_name, signing_name)
    try:
        get_service_model(name)
    except Exception:  # botocore's loader raises several unrelated types for an unknown name
        return None
    return name


def identify(environ: dict[str, Any], body: bytes) -> Target | None:
    """The target of a signed AWS request, or ``None`` for anything else (unsigned, control API…)."""
    match = _CREDENTIAL.search(environ.get("HTTP_AUTHORIZATION", ""))
    if match is None:
        query = parse_qs(environ.get("QUERY_STRING", ""))
        credential = (query.get("X-Amz-Credential") or [""])[0]
        parts = credential.split("/")
        if len(parts) != 5:
            return None
        access_key, region, signing_name = parts[0], parts[2], parts[3]
    else:
        access_key, region, signing_name = match.groups()
    service = _service_name(signing_name)
    if service is None:
        return Target(service=signing_name, region=region, access_key=access_key)
    request = moto_request(environ, body)
    target = Target(service=service, region=region, access_key=access_key)
    service_model = get_service_model(service)
    try:
        target.protocol = determine_request_protocol(service_model, request.content_type)
        operation_model, target.uri_params = get_service_router(service).match(request)
    except Exception:  # unroutable: leave the operation unknown and let moto answer as it does
        return target
    target.operation = operation_model.name
    target.operation_model = operation_model
    return target


def parse_params(target: Target, environ: dict[str, Any], body: bytes) -> dict[str, Any]:
    """The request's input structure as a dict keyed by member names (timestamps as datetimes)."""
    assert target.operation_model is not None
    request = moto_request(environ, body)
    parser = PROTOCOL_PARSERS[target.protocol](target.operation_model)
    try:
        return parser.parse({
            "method": request.method, "values": request.values, "headers": request.headers,
            "body": request.data, "url_path": request.path, "url_params": target.uri_params,
        })
    except (ValueError, TypeError, AttributeError) as error:
        raise ApiError("SerializationException", f"Could not parse the request: {error}") from error


def jsonable(value: Any) -> Any:
    """``value`` with datetimes as ISO strings and blobs as their size, for the request log and the control API."""
    if isinstance(value, dict):
        return {key: jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    return value


def serialize_result(target: Target, result: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """``result`` (member names → values, timestamps as datetimes or epoch seconds) in the wire format."""
    assert target.operation_model is not None
    serializer_class = get_serializer_class(target.service, target.protocol)
    serializer = serializer_class(operation_model=target.operation_model, value_picker=DefaultAttributePicker())
    response = serializer.serialize(result)
    headers = {key: str(value) for key, value in response["headers"].items()}
    headers["x-amzn-RequestId"] = new_uuid()
    body = response["body"]
    return int(response["status_code"]), headers, body.encode() if isinstance(body, str) else body


def _error_shape(service: str, code: str) -> Any:
    try:
        shape = get_service_model(service).shape_for(code)
    except Exception:  # no such shape in this service's model
        return None
    return shape if shape.metadata.get("exception") else None


def error_status(service: str, code: str) -> int:
    shape = _error_shape(service, code)
    if shape is not None:
        return int(shape.metadata.get("error", {}).get("httpStatusCode", 400))
    return 400


def render_error(target: Target | None, error: ApiError) -> tuple[int, dict[str, str], bytes]:
    """``error`` as the service would send it, in the target's protocol (JSON when unknown)."""
    service = target.service if target else ""
    protocol = target.protocol if target else "json"
    status = error.status or error_status(service, error.code)
    request_id = new_uuid()
    if protocol in ("json", "rest-json"):
        shape = _error_shape(service, error.code)
        members = shape.members if shape is not None else {}
        message_key = "Message" if "Message" in members else "message"
        payload = {"__type": error.code, message_key: error.message, **error.fields}
        content_type = "application/x-amz-json-1.1" if protocol == "json" else "application/json"
        headers = {"Content-Type": content_type, "x-amzn-ErrorType": error.code, "x-amzn-RequestId": request_id}
        return status, headers, json.dumps(payload).encode()
    code, message = escape(error.code), escape(error.message)
    if protocol == "ec2":
        body = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Errors><Error><Code>{code}</Code>"
                f"<Message>{message}</Message></Error></Errors><RequestID>{request_id}</RequestID></Response>")
    elif protocol == "query":
        fault = "Sender" if status < 500 else "Receiver"
        body = (f"<ErrorResponse><Error><Type>{fault}</Type><Code>{code}</Code><Message>{message}</Message>"
                f"</Error><RequestId>{request_id}</RequestId></ErrorResponse>")
    else:
        body = (f"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{message}"
                f"</Message><RequestId>{request_id}</RequestId></Error>")
    return status, {"Content-Type": "text/xml", "x-amzn-RequestId": request_id}, body.encode()
