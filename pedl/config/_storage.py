"""Checkpoint storage configs, discriminated by ``type``."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Discriminator, Field, Tag, model_validator

from pedl.config._base import ConfigModel, config_error, tag_of

STORAGE_TYPES: tuple[str, ...] = ("shared_fs", "directory", "s3", "gcs", "azure")
"""Every ``checkpoint_storage.type`` (Determined's), each one ``pedl.storage.make_storage``
builds; validation refuses the others."""

DEFAULT_HOST_PATH = "~/.pedl/checkpoints"
"""Where checkpoints go when a config has no ``checkpoint_storage``: a ``shared_fs``
store rooted at this path (``~`` is expanded by the storage backend, not here)."""


class _StorageBase(ConfigModel):
    """Checkpoint retention common to all backends (Determined's defaults)."""

    merged_over_default: bool = Field(default=False, exclude=True)
    """Set when the config's block had no ``type``: its fields are merged over the default
    storage, whose place (``host_path``) the master or local mode then gives (not part of the
    config's canonical form)."""
    save_experiment_best: int = Field(default=0, ge=0)
    save_trial_best: int = Field(default=1, ge=0)
    save_trial_latest: int = Field(default=1, ge=0)


class SharedFSStorageConfig(_StorageBase):
    """``shared_fs``: a directory on a file system every node can reach (``host_path``).

    ``storage_path`` is relative to ``host_path`` or an absolute path inside it. Determined's
    container-mount keys (``propagation``, ``container_path``, ``checkpoint_path``,
    ``tensorboard_path``) are accepted and ignored.
    """

    ignored_fields: ClassVar[frozenset[str]] = frozenset(
        {"propagation", "container_path", "checkpoint_path", "tensorboard_path"}
    )

    type: Literal["shared_fs"]
    host_path: str
    storage_path: str | None = None
    propagation: str = "rprivate"
    container_path: str | None = None
    checkpoint_path: str | None = None
    tensorboard_path: str | None = None

    @model_validator(mode="after")
    def _storage_path_inside_host_path(self) -> SharedFSStorageConfig:
        path = self.storage_path
        if path is not None and posixpath.isabs(path):
            host = posixpath.normpath(self.host_path)
            inside = posixpath.normpath(path)
            if inside != host and not inside.startswith(host.rstrip("/") + "/"):
                raise config_error(
                    f"storage_path '{path}' must be relative or a subdirectory of host_path "
                    f"'{self.host_path}'",
                    at="storage_path",
                )
        return self


class DirectoryStorageConfig(_StorageBase):
    """``directory``: a path as seen from inside the trial's environment."""

    type: Literal["directory"]
    container_path: str


class S3StorageConfig(_StorageBase):
    """``s3``: an S3 (or S3-compatible, via ``endpoint_url``) bucket; checkpoints go under
    ``prefix``. Without ``access_key`` and ``secret_key``, boto3's usual credentials apply
    (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, shared files, the instance's role)."""

    type: Literal["s3"]
    bucket: str
    prefix: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    endpoint_url: str | None = None


class GCSStorageConfig(_StorageBase):
    """``gcs``: a Google Cloud Storage bucket; checkpoints go under ``prefix``. Credentials
    are Google's Application Default Credentials (``GOOGLE_APPLICATION_CREDENTIALS``, the
    gcloud login, the instance's service account); ``STORAGE_EMULATOR_HOST`` points the
    client at an emulator instead (no credentials then)."""

    type: Literal["gcs"]
    bucket: str
    prefix: str | None = None


class AzureStorageConfig(_StorageBase):
    """``azure``: an Azure Blob Storage container. Exactly one of ``connection_string`` (which
    may name its own ``BlobEndpoint``, e.g. Azurite's) or ``account_url`` is given (Determined's
    rule); ``credential`` (an account key or SAS token) goes with either, and with
    ``account_url`` and no ``credential`` Azure's default credential chain applies (needs
    ``azure-identity``). ``connection_string`` and
    ``credential`` are secrets: masked wherever a config is shown."""

    type: Literal["azure"]
    container: str
    connection_string: str | None = None
    account_url: str | None = None
    credential: str | None = None

    @model_validator(mode="after")
    def _one_way_to_the_account(self) -> AzureStorageConfig:
        if (self.connection_string is None) == (self.account_url is None):
            raise config_error(
                "exactly one of connection_string or account_url must be set",
                at="connection_string",
            )
        return self


CheckpointStorageConfig = Annotated[
    Annotated[SharedFSStorageConfig, Tag("storage:shared_fs")]
    | Annotated[DirectoryStorageConfig, Tag("storage:directory")]
    | Annotated[S3StorageConfig, Tag("storage:s3")]
    | Annotated[GCSStorageConfig, Tag("storage:gcs")]
    | Annotated[AzureStorageConfig, Tag("storage:azure")],
    Discriminator(tag_of("storage", "type")),
]
"""The ``checkpoint_storage`` section, discriminated by ``type``."""


def default_checkpoint_storage() -> SharedFSStorageConfig:
    """The storage used when a config gives none: shared_fs at ``DEFAULT_HOST_PATH``."""
    return SharedFSStorageConfig(type="shared_fs", host_path=DEFAULT_HOST_PATH)


def merge_over_default_storage(value: Any) -> Any:
    """A raw ``checkpoint_storage`` mapping without ``type``, merged over the default storage
    (``shared_fs`` at :data:`DEFAULT_HOST_PATH`; marked ``merged_over_default`` when it names
    no ``host_path`` either, so that the master's or local mode's default place replaces
    that one); any other value as it is."""
    if not isinstance(value, Mapping) or "type" in value:
        return value
    if "host_path" in value:
        return {"type": "shared_fs", **value}
    return {
        "type": "shared_fs",
        "host_path": DEFAULT_HOST_PATH,
        **value,
        "merged_over_default": True,
    }
