"""The WSGI application in front of moto: control API, faults, extensions, the request log.

For each request: ``/_sandbox/…`` goes to the control API, ``/api/2.0/mlflow/…`` to the MLflow data plane
(``mlflow_api``), ``/_hub/…`` to the Hugging Face Hub (``sandbox.hub``). A signed AWS request is identified
(``service:Operation``), due transitions are applied, and the fault plan may delay it or answer it with an
error. Otherwise an extension handler answers it if one is registered (after the model's constraints are
checked, and with idempotent replay for the operations whose model marks an idempotency token: the same
token with the same parameters returns the first answer without acting again, with different parameters it is
refused), else moto does. Mutating calls are then written to the request log, whoever answered them.
"""

from __future__ import annotations

import io
import json
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from moto.core.base_backend import BackendDict, backend_lock
from moto.core.model_instances import reset_model_data
from moto.s3.models import s3_backends
from werkzeug.wsgi import get_input_stream

from sandbox import clock, control, hub
from sandbox.aws import (
    core,
    eks,
    eks_access,
    eks_addons,
    eks_nodegroups,
    faults,
    fsx,
    governance,
    hyperpod,
    hyperpod_nodes,
    mlflow,
    mlflow_api,
    pricing,
    protocol,
    quotas,
    requestlog,
    tags,
    training_plans,
    validation,
    world,
)
from sandbox.aws.core import ApiError, Call

EXTENSIONS = (eks, eks_access, eks_addons, eks_nodegroups, fsx, governance, hyperpod, hyperpod_nodes, mlflow, pricing,
              quotas, tags, training_plans)
"""The modules whose ``@operation`` handlers the dispatcher serves (importing them registers them)."""

VALIDATION_CODES = {"eks": "InvalidParameterException", "service-quotas": "IllegalArgumentException",
                    "fsx": "BadRequest", "pricing": "InvalidParameterException"}
TOKEN_MISMATCH: dict[str, tuple[str, dict[str, Any]]] = {
    "fsx": ("IncompatibleParameterError", {"Parameter": "ClientRequestToken"})}
Response = tuple[int, dict[str, str], bytes]
StartResponse = Callable[..., Any]

_tokens: dict[tuple[str, str, str, str], tuple[str, Response]] = {}
_XML_CODE = re.compile(rb"<Code>([^<]+)</Code>")
_REASONS = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 400: "Bad Request", 403: "Forbidden",
            404: "Not Found", 409: "Conflict", 429: "Too Many Requests", 500: "Internal Server Error",
            503: "Service Unavailable"}


@control.on_reset
def _reset() -> None:
    """Forget every moto backend and the idempotency tokens.

    Same effect as moto's ``/moto-api/reset`` minus its first step, which re-initialises every backend in
    use (EC2 alone loads 1,300 AMIs) only to discard it: backends are created afresh on their next use. S3's
    global bucket-name registry lives outside the backends and is cleared too: a name it still held would point
    at a bucket of a forgotten backend, and moto loops on it.
    """
    with backend_lock:
        # moto types its registry of every BackendDict as an instance variable of the generic class
        for backends in BackendDict._instances:  # type: ignore[misc]
            backends.clear()
        BackendDict._instances.clear()  # type: ignore[misc]
        s3_backends.bucket_accounts.clear()
    reset_model_data()
    with core.transaction():
        _tokens.clear()


def _read_body(environ: dict[str, Any]) -> bytes:
    body = get_input_stream(environ).read()
    environ["wsgi.input"] = io.BytesIO(body)
    environ["CONTENT_LENGTH"] = str(len(body))
    environ.pop("HTTP_TRANSFER_ENCODING", None)
    environ["wsgi.input_terminated"] = False
    return body


def _respond(start_response: StartResponse, response: Response) -> list[bytes]:
    status, headers, body = response
    headers = {key: value for key, value in headers.items() if key.lower() != "content-length"}
    headers["Content-Length"] = str(len(body))
    start_response(f"{status} {_REASONS.get(status, 'Status')}", list(headers.items()))
    return [body]


def _token_member(target: protocol.Target) -> str | None:
    shape = target.operation_model.input_shape if target.operation_model else None
    if shape is None:
        return None
    return next((name for name, member in shape.members.items() if member.metadata.get("idempotencyToken")), None)


def _client_token(params: dict[str, Any]) -> str | None:
    for key in ("ClientToken", "clientRequestToken", "ClientRequestToken", "IdempotencyToken", "clientToken"):
        if isinstance(params.get(key), str):
            return params[key]
    return None


def _fingerprint(params: dict[str, Any], token_member: str) -> str:
    return json.dumps(protocol.jsonable({k: v for k, v in params.items() if k != token_member}), sort_keys=True,
                      default=str)


class SandboxApp:
    """The sandbox's AWS endpoint: ``control`` serves ``/_sandbox/``, ``moto`` everything extensions don't."""

    def __init__(self, moto: Callable[..., Iterable[bytes]], control_api: Callable[..., Iterable[bytes]]):
        self.moto = moto
        self.control_api = control_api

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "").startswith("/_sandbox"):
            return self.control_api(environ, start_response)
        if environ.get("PATH_INFO", "").startswith(mlflow_api.PREFIX):
            return mlflow_api.application(environ, start_response)
        if environ.get("PATH_INFO", "").startswith(hub.PREFIX):
            return hub.application(environ, start_response)
        body = _read_body(environ)
        target = protocol.identify(environ, body)
        if target is None:
            return self.moto(environ, start_response)
        world.refresh()
        params: dict[str, Any] = {}
        parse_error: ApiError | None = None
        if target.operation_model is not None:
            try:
                params = protocol.parse_params(target, environ, body)
            except ApiError as error:
                parse_error = error
        decision = faults.decide(target.key, target.protocol)
        if decision.latency_seconds:
            time.sleep(decision.latency_seconds)
        if decision.error is not None:
            response = protocol.render_error(target, decision.error)
            self._log(target, params, response, fault=decision.rule_id)
            return _respond(start_response, response)
        handler = core.handler_for(target.service, target.operation)
        if handler is not None:
            outcome = self._extension(handler, target, params, parse_error)
            if outcome is not None:
                response, replayed = outcome
                self._log(target, params, response, replayed=replayed)
                return _respond(start_response, response)
        return self._moto(target, params, environ, start_response)

    def _extension(self, handler: core.Handler, target: protocol.Target, params: dict[str, Any],
                   parse_error: ApiError | None) -> tuple[Response, bool] | None:
        """The extension's response and whether it was replayed, or ``None`` when it passes to moto."""
        try:
            if parse_error is not None:
                raise parse_error
            assert target.operation_model is not None
            validation.check(target.operation_model.input_shape, params,
                             VALIDATION_CODES.get(target.service, "ValidationException"))
            token_member = _token_member(target)
            token = params.get(token_member) if token_member else None
            key = (target.service, target.operation, target.region, str(token))
            call = Call(service=target.service, operation=target.operation, region=target.region, params=params,
                        access_key=target.access_key)
            with core.transaction():
                if token is not None and key in _tokens:
                    fingerprint, stored = _tokens[key]
                    if fingerprint == _fingerprint(params, str(token_member)):
                        return stored, True
                    code, fields = TOKEN_MISMATCH.get(target.service, ("InvalidRequestException", {}))
                    raise ApiError(code, "The client request token was already used with different parameters.",
                                   **fields)
                result = handler(call)
                if result is core.PASS:
                    return None
                response = protocol.serialize_result(target, result)
                if token is not None and response[0] < 300:
                    _tokens[key] = (_fingerprint(params, str(token_member)), response)
            return response, False
        except ApiError as error:
            return protocol.render_error(target, error), False
        except Exception as error:  # a sandbox bug: answer like AWS's internal error, keep the trace
            traceback.print_exc(file=sys.stderr)
            return protocol.render_error(target, ApiError("InternalFailure", f"Sandbox error: {error}", 500)), False

    def _moto(self, target: protocol.Target, params: dict[str, Any], environ: dict[str, Any],
              start_response: StartResponse) -> Iterable[bytes]:
        """moto's answer; what moto does not implement is a 501 ``NotImplemented``, a moto crash a 500
        ``InternalFailure``, both in the service's error shape."""
        captured: dict[str, Any] = {}

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured.update(status=int(status.split(" ", 1)[0]), headers=dict(headers), line=status)
            return lambda data: None

        try:
            with core.moto_lock(target.service):
                iterable = self.moto(environ, capture)
                try:
                    body = b"".join(iterable)
                finally:
                    close = getattr(iterable, "close", None)
                    if close is not None:
                        close()
            response: Response = (captured["status"], captured["headers"], body)
        except NotImplementedError:
            response = protocol.render_error(target, ApiError(
                "NotImplemented", f"The AWS sandbox does not implement {target.key}.", 501))
        except Exception as error:  # moto's bug: answer like AWS's internal error, keep the trace
            traceback.print_exc(file=sys.stderr)
            response = protocol.render_error(target, ApiError("InternalFailure", f"moto failed: {error}", 500))
        self._log(target, params, response)
        return _respond(start_response, response)

    @staticmethod
    def _log(target: protocol.Target, params: dict[str, Any], response: Response, fault: int | None = None,
             replayed: bool = False) -> None:
        if not target.mutating:
            return
        status, headers, body = response
        error_code = None
        if status >= 400:
            error_code = {key.lower(): value for key, value in headers.items()}.get("x-amzn-errortype")
            match = _XML_CODE.search(body) if error_code is None else None
            error_code = match.group(1).decode() if match else error_code
        requestlog.record(time=clock.now(), service=target.service, operation=target.operation,
                          region=target.region, params=protocol.jsonable(params), client_token=_client_token(params),
                          status=status, error_code=error_code, fault=fault, replayed=replayed)
