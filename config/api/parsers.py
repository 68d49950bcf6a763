"""JSON parsing with a hard size limit (DRF's parsers read the stream without Django's body limit) and a bound on
nesting depth (the standard parser recurses once per level, so a small body of a thousand ``[`` exhausts the
interpreter's recursion limit)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from io import BytesIO
from typing import IO, Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from config.errors import JsonTooDeep, PayloadTooLarge

#: The deepest nesting of arrays and objects a JSON body may have; no request of the API comes near it.
MAX_JSON_DEPTH = 64

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")


def json_depth(body: bytes) -> int:
    """How deeply the arrays and objects of the JSON text ``body`` nest (0 for a scalar), without parsing it.
    Brackets inside strings do not count; for text that is not JSON the answer is an upper bound."""
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", body))
    return max(itertools.accumulate(1 if byte in b"[{" else -1 for byte in brackets), default=0)


def check_json_depth(body: bytes) -> None:
    """Raise :class:`JsonTooDeep` when ``body`` nests deeper than :data:`MAX_JSON_DEPTH`."""
    if json_depth(body) > MAX_JSON_DEPTH:
        raise JsonTooDeep(f"The request body nests arrays and objects deeper than {MAX_JSON_DEPTH} levels.")


class LimitedJSONParser(JSONParser):
    """Refuses bodies over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes with ``payload_too_large`` and bodies nested deeper
    than :data:`MAX_JSON_DEPTH` with ``json_too_deep``, before parsing."""

    def parse(self, stream: IO[Any] | None, media_type: str | None = None,
              parser_context: Mapping[str, Any] | None = None) -> Any:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        request = (parser_context or {}).get("request")
        declared = int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else 0
        if declared > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        body = stream.read(limit + 1) if stream is not None else b""
        if len(body) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        check_json_depth(body)
        return super().parse(BytesIO(body), media_type, parser_context)
