"""obstore's exceptions -> txsql's typed storage errors, each naming the location.

obstore raises ``FileNotFoundError`` for a missing object (callers rely on that, so it
passes through) but also for a missing bucket, and a ``GenericError`` whose message carries
the HTTP status and the store's error code for most other failures. The message text is
the only place some causes are visible (a region mismatch is a 301 or a 400 with an S3
error code), so matching on it is confined to this module.
"""

from __future__ import annotations

from obstore.exceptions import (
    BaseError,
    NotSupportedError,
    PermissionDeniedError,
    UnauthenticatedError,
    UnknownConfigurationKeyError,
)

from txsql.errors import (
    BucketNotFoundError,
    ConditionalWriteUnsupportedError,
    InvalidStorageOptionError,
    StorageCredentialsError,
    StorageError,
    StorageRegionError,
    StorageUnreachableError,
    StorageWriteError,
)

_BUCKET_MISSING = ("NoSuchBucket", "ContainerNotFound", "The specified bucket does not exist")
_REGION = (
    "AuthorizationHeaderMalformed",
    "PermanentRedirect",
    "IllegalLocationConstraintException",
    "IncorrectEndpoint",
    "301 Moved Permanently",
    "is wrong; expecting",
)
_CREDENTIALS = (
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "ExpiredToken",
    "InvalidToken",
    "AccessDenied",
    "AuthenticationFailed",
    "403 Forbidden",
    "401 Unauthorized",
    # No explicit keys: object_store falls back to the EC2/ECS metadata service.
    "/latest/api/token",
    "/latest/meta-data",
    "169.254.169.254",
    "credential",
)
_UNREACHABLE = (
    "error sending request",
    "Connect",
    "dns error",
    "timed out",
    "connection refused",
    "Connection refused",
)
_CONDITIONAL = ("NotImplemented", "501 Not Implemented", "If-None-Match")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__


def translate(exc: BaseException, location: str, operation: str) -> BaseException:
    """The exception to raise for ``exc`` raised while ``operation`` ran on ``location``.

    A plain missing object stays a ``FileNotFoundError`` (the log and DV readers handle
    it); everything else becomes a :class:`~txsql.errors.StorageError` leaf.
    """
    text = str(exc)
    detail = _first_line(exc)
    if isinstance(exc, StorageError):
        return exc
    if isinstance(exc, UnknownConfigurationKeyError) or operation == "configure":
        return InvalidStorageOptionError(
            f"cannot configure the object store for {location}: {detail}"
        )
    if any(marker in text for marker in _BUCKET_MISSING):
        return BucketNotFoundError(f"the bucket of {location} does not exist ({detail})")
    if isinstance(exc, FileNotFoundError):
        return exc
    if isinstance(exc, NotSupportedError) or (
        operation == "write" and any(marker in text for marker in _CONDITIONAL)
    ):
        return ConditionalWriteUnsupportedError(
            f"the object store behind {location} refused a conditional write ({detail})"
        )
    if any(marker in text for marker in _REGION):
        return StorageRegionError(
            f"the bucket of {location} is in another region than the requests were signed "
            f"for ({detail})"
        )
    if isinstance(exc, PermissionDeniedError | UnauthenticatedError) or any(
        marker in text for marker in _CREDENTIALS
    ):
        return StorageCredentialsError(
            f"access to {location} was refused or no credentials were found ({detail})"
        )
    if any(marker in text for marker in _UNREACHABLE):
        return StorageUnreachableError(
            f"the object store for {location} could not be reached ({detail})"
        )
    if operation == "write":
        return StorageWriteError(f"writing {location} failed; nothing was written ({detail})")
    if isinstance(exc, BaseError | OSError | ValueError):
        return StorageError(f"{operation} of {location} failed ({detail})")
    return exc
