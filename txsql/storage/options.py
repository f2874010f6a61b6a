"""Object-store settings: where endpoint, region and credentials come from.

One precedence, highest first:

1. ``storage_options`` given to txsql (``Session(storage_options={...})``);
2. the environment (``AWS_*``, ``GOOGLE_*``, ``AZURE_*``);
3. Spark's Hadoop configuration (``spark.hadoop.fs.s3a.*`` and friends), which the planner
   reads from the Spark session and passes in as a plain mapping (storage never imports
   pyspark).

Keys are case-insensitive and accept the usual spellings (``aws_access_key_id``,
``AWS_ENDPOINT_URL``, ``endpoint``...). Keys that configure the HTTP client
(``allow_http``, ``timeout``...) or retries (``max_retries``, ``retry_timeout``) are split
off; everything else goes to the store's own configuration, which rejects unknown keys.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from txsql.errors import InvalidStorageOptionError
from txsql.storage.paths import SCHEME_FAMILY

CLIENT_KEYS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "timeout",
        "read_timeout",
        "pool_idle_timeout",
        "proxy_url",
        "proxy_ca_certificate",
        "proxy_excludes",
        "user_agent",
    }
)
RETRY_KEYS = frozenset({"max_retries", "retry_timeout"})

# Spellings users write -> the store's canonical key, per family.
_ALIASES: dict[str, dict[str, str]] = {
    "s3": {
        "aws_access_key_id": "access_key_id",
        "aws_secret_access_key": "secret_access_key",
        "aws_session_token": "session_token",
        "token": "session_token",
        "aws_region": "region",
        "aws_default_region": "region",
        "aws_endpoint": "endpoint",
        "aws_endpoint_url": "endpoint",
        "endpoint_url": "endpoint",
        "aws_allow_http": "allow_http",
        "aws_virtual_hosted_style_request": "virtual_hosted_style_request",
        "aws_skip_signature": "skip_signature",
        "aws_metadata_endpoint": "metadata_endpoint",
    },
    "gcs": {
        "google_service_account": "service_account_path",
        "google_service_account_path": "service_account_path",
        "google_service_account_key": "service_account_key",
        "google_application_credentials": "application_credentials",
    },
    "azure": {
        "azure_storage_account_name": "account_name",
        "azure_storage_account_key": "account_key",
        "azure_storage_access_key": "account_key",
        "azure_storage_sas_token": "sas_token",
        "azure_storage_endpoint": "endpoint",
        "azure_storage_use_emulator": "use_emulator",
        "azure_allow_http": "allow_http",
    },
}

# Environment variables read for each canonical key (first one set wins).
_ENVIRONMENT: dict[str, dict[str, tuple[str, ...]]] = {
    "s3": {
        "access_key_id": ("AWS_ACCESS_KEY_ID",),
        "secret_access_key": ("AWS_SECRET_ACCESS_KEY",),
        "session_token": ("AWS_SESSION_TOKEN", "AWS_TOKEN"),
        "region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
        "endpoint": ("AWS_ENDPOINT_URL", "AWS_ENDPOINT"),
        "allow_http": ("AWS_ALLOW_HTTP",),
        "virtual_hosted_style_request": ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST",),
    },
    "gcs": {
        "service_account_path": ("GOOGLE_SERVICE_ACCOUNT", "GOOGLE_SERVICE_ACCOUNT_PATH"),
        "service_account_key": ("GOOGLE_SERVICE_ACCOUNT_KEY",),
        "application_credentials": ("GOOGLE_APPLICATION_CREDENTIALS",),
    },
    "azure": {
        "account_name": ("AZURE_STORAGE_ACCOUNT_NAME",),
        "account_key": ("AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_ACCESS_KEY"),
        "sas_token": ("AZURE_STORAGE_SAS_TOKEN",),
    },
}

# Hadoop keys (without the ``spark.hadoop.`` prefix) for each canonical key.
_HADOOP: dict[str, dict[str, tuple[str, ...]]] = {
    "s3": {
        "access_key_id": ("fs.s3a.access.key",),
        "secret_access_key": ("fs.s3a.secret.key",),
        "session_token": ("fs.s3a.session.token",),
        "region": ("fs.s3a.endpoint.region",),
        "endpoint": ("fs.s3a.endpoint",),
    },
    "gcs": {
        "service_account_path": (
            "google.cloud.auth.service.account.json.keyfile",
            "fs.gs.auth.service.account.json.keyfile",
        ),
    },
    "azure": {},
}


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """Resolved settings of one store, as sorted tuples so they hash and pickle."""

    config: tuple[tuple[str, str], ...]
    client: tuple[tuple[str, str], ...]
    retry: tuple[tuple[str, str], ...]

    def config_dict(self) -> dict[str, str]:
        return dict(self.config)

    def client_dict(self) -> dict[str, str]:
        return dict(self.client)

    def retry_dict(self) -> dict[str, str]:
        return dict(self.retry)


def _canonical_key(family: str, key: str) -> str:
    lowered = key.strip().lower()
    return _ALIASES.get(family, {}).get(lowered, lowered)


def _hadoop_values(family: str, bucket: str, hadoop: Mapping[str, str]) -> dict[str, str]:
    """Canonical settings from Hadoop keys; per-bucket s3a keys beat global ones."""
    conf = {k.removeprefix("spark.hadoop."): str(v) for k, v in hadoop.items()}
    out: dict[str, str] = {}
    for canonical, names in _HADOOP.get(family, {}).items():
        for name in names:
            per_bucket = name.replace("fs.s3a.", f"fs.s3a.bucket.{bucket}.", 1)
            value = conf.get(per_bucket) if family == "s3" else None
            value = value or conf.get(name)
            if value:
                out[canonical] = value
                break
    if family == "s3":
        endpoint = out.get("endpoint")
        if endpoint and "://" not in endpoint:
            # s3a endpoints are host[:port]; TLS unless fs.s3a.connection.ssl.enabled=false.
            ssl = conf.get("fs.s3a.connection.ssl.enabled", "true").lower() != "false"
            out["endpoint"] = ("https://" if ssl else "http://") + endpoint
        if conf.get("fs.s3a.path.style.access", "").lower() == "true":
            out["virtual_hosted_style_request"] = "false"
    if family == "azure":
        # fs.azure.account.key.<account>.dfs.core.windows.net = <key>
        account = bucket.split("@", 1)[1].split(".", 1)[0] if "@" in bucket else ""
        for suffix in ("dfs.core.windows.net", "blob.core.windows.net"):
            key = conf.get(f"fs.azure.account.key.{account}.{suffix}")
            if account and key:
                out.update(account_name=account, account_key=key)
                break
    return out


def _environment_values(family: str, environ: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for canonical, names in _ENVIRONMENT.get(family, {}).items():
        for name in names:
            if environ.get(name):
                out[canonical] = environ[name]
                break
    return out


def resolve_settings(
    scheme: str,
    bucket: str,
    explicit: Mapping[str, object] | None = None,
    *,
    hadoop: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> StoreSettings:
    """Merge the three sources for the store serving ``scheme://bucket``.

    >>> s = resolve_settings("s3", "lake", {"AWS_ENDPOINT_URL": "http://h:9000"},
    ...                      hadoop={"spark.hadoop.fs.s3a.endpoint": "other:1"}, environ={})
    >>> s.config_dict()["endpoint"], s.client_dict()["allow_http"]
    ('http://h:9000', 'true')

    Raises:
        InvalidStorageOptionError: an option value is not a string, number or bool.
    """
    family = SCHEME_FAMILY.get(scheme, scheme)
    merged = _hadoop_values(family, bucket, hadoop or {})
    merged.update(_environment_values(family, os.environ if environ is None else environ))
    for key, value in (explicit or {}).items():
        if not isinstance(value, str | int | float | bool):
            raise InvalidStorageOptionError(
                f"storage option {key!r} has a {type(value).__name__} value; options are "
                "strings, numbers or booleans"
            )
        text = str(value).lower() if isinstance(value, bool) else str(value)
        merged[_canonical_key(family, str(key))] = text
    # An explicit http:// endpoint (a local MinIO or test server) means plain HTTP is meant.
    if merged.get("endpoint", "").startswith("http://"):
        merged.setdefault("allow_http", "true")
    config = {k: v for k, v in merged.items() if k not in CLIENT_KEYS | RETRY_KEYS}
    client = {k: v for k, v in merged.items() if k in CLIENT_KEYS}
    retry = {k: v for k, v in merged.items() if k in RETRY_KEYS}
    return StoreSettings(
        tuple(sorted(config.items())), tuple(sorted(client.items())), tuple(sorted(retry.items()))
    )
