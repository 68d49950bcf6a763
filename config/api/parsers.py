"""JSON parsing with a hard size limit (DRF's parsers read the stream without Django's body limit)."""

from __future__ import annotations

from collections.abc import Mapping
from io import BytesIO
from typing import IO, Any

from django.conf import settings
from rest_framework.parsers import JSONParser

from config.errors import PayloadTooLarge


class LimitedJSONParser(JSONParser):
    """Refuses bodies over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes with ``payload_too_large``."""

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
        return super().parse(BytesIO(body), media_type, parser_context)
