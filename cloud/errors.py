"""Translation of provider errors (AWS, Kubernetes) into the error vocabulary, keeping the provider's words.

Every translated error carries ``provider``: ``{"service", "operation", "code", "message", "request_id",
"retryable"}`` so operations can record it and decide whether to retry, while faces show the stable code.
"""

from __future__ import annotations

from config.errors import (
    ApplicationError,
    CloudError,
    Conflict,
    NotFound,
    PermissionDenied,
    QuotaExceeded,
    Throttled,
    ValidationFailed,
)

THROTTLING = frozenset({
    "Throttling", "ThrottlingException", "ThrottledException", "TooManyRequestsException", "RequestLimitExceeded",
    "RequestThrottled", "RequestThrottledException", "ProvisionedThroughputExceededException", "SlowDown",
    "PriorRequestNotComplete", "EC2ThrottledException", "BandwidthLimitExceeded",
})
NOT_FOUND = frozenset({
    "ResourceNotFound", "ResourceNotFoundException", "NotFoundException", "NoSuchEntity", "NoSuchBucket",
    "NoSuchKey", "NoSuchEntityException", "FileSystemNotFound",
})
CONFLICT = frozenset({
    "ResourceInUse", "ResourceInUseException", "ConflictException", "ResourceAlreadyExists",
    "ResourceAlreadyExistsException", "AlreadyExistsException", "EntityAlreadyExists", "DependencyViolation",
    "BucketAlreadyExists", "BucketAlreadyOwnedByYou", "IdempotentParameterMismatch",
    "IdempotentParameterMismatchException", "IncorrectState", "InvalidStateException", "ResourceNotReady",
})
VALIDATION = frozenset({
    "ValidationException", "ValidationError", "InvalidParameterValue", "InvalidParameterValueException",
    "InvalidParameterException", "InvalidParameterCombination", "InvalidRequestException", "InvalidInput",
    "MalformedPolicyDocument", "MalformedPolicyDocumentException", "MissingParameter", "BadRequestException",
    "InvalidParameter", "UnsupportedAvailabilityZoneException",
})
ACCESS_DENIED = frozenset({
    "AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnrecognizedClientException",
    "ExpiredToken", "ExpiredTokenException", "InvalidClientTokenId", "SignatureDoesNotMatch",
    "AuthFailure", "UnauthorizedException", "NotAuthorized",
})
QUOTA = frozenset({
    "ResourceLimitExceeded", "LimitExceededException", "ServiceQuotaExceededException", "LimitExceeded",
    "InsufficientInstanceCapacity", "InsufficientCapacityException", "VpcLimitExceeded", "AddressLimitExceeded",
})

_CLASSES: list[tuple[frozenset[str], type[ApplicationError], str]] = [
    (THROTTLING, Throttled, "cloud_throttled"),
    (NOT_FOUND, NotFound, "cloud_not_found"),
    (CONFLICT, Conflict, "cloud_conflict"),
    (VALIDATION, ValidationFailed, "cloud_validation"),
    (ACCESS_DENIED, PermissionDenied, "cloud_access_denied"),
    (QUOTA, QuotaExceeded, "cloud_quota_exceeded"),
]


def classify(provider_code: str) -> tuple[type[ApplicationError], str]:
    """The vocabulary class and stable code for an AWS error code."""
    for codes, error_class, code in _CLASSES:
        if provider_code in codes:
            return error_class, code
    if provider_code.endswith(".NotFound") or provider_code.endswith("NotFound"):
        return NotFound, "cloud_not_found"
    if provider_code.endswith(".Duplicate") or provider_code.endswith("AlreadyExists"):
        return Conflict, "cloud_conflict"
    if provider_code.endswith("LimitExceeded"):
        return QuotaExceeded, "cloud_quota_exceeded"
    if provider_code.startswith("Invalid") or provider_code.startswith("Malformed"):
        return ValidationFailed, "cloud_validation"
    return CloudError, "cloud_error"


def provider_error(
    error_class: type[ApplicationError], code: str, *, service: str, operation: str, provider_code: str,
    provider_message: str, request_id: str = "", retryable: bool = False,
) -> ApplicationError:
    """Build the vocabulary error; the message names the call and keeps the provider's text."""
    error = error_class(f"{service} {operation} failed: {provider_code}: {provider_message}".strip(), code=code)
    error.provider = {
        "service": service, "operation": operation, "code": provider_code, "message": provider_message,
        "request_id": request_id, "retryable": retryable,
    }
    return error
