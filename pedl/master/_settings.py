"""The master's settings: flags, ``PEDL_*`` environment variables, an optional YAML file."""

from __future__ import annotations

import ipaddress
import os
import pwd
import tempfile
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from pedl import model_def

DEFAULT_HOME = Path("~/.pedl")
CONFIG_FILE_ENV = "PEDL_CONFIG_FILE"

MiB = 1024 * 1024

DEFAULT_UPLOAD_MEMORY_BYTES = 256 * MiB
"""The least default of ``max_upload_memory_bytes``."""

DEFAULT_DB_CONNECTIONS = {"sqlite": 16, "postgresql": 20}
"""``max_db_connections`` when not set, by backend."""
RESERVED_DB_CONNECTIONS = 4
"""Connections kept out of the request threads' reach: the metric writer, the orchestrator,
its log writer, and one spare; the bulk metric writers (:attr:`MasterSettings.metric_writers`)
keep theirs too."""
POSTGRESQL_BULK_WRITERS = 3
"""Metric writer threads for big reports on PostgreSQL, beside the one for small reports
(fewer if ``max_db_connections`` is small): the server stores several trials' big reports at
once. SQLite writes one transaction at a time: one writer takes every report there."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) reaches this machine only."""
    if host.strip("[]").lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _default_cpu_slots() -> int:
    return max(1, (os.cpu_count() or 1) // 2)


class _YamlFileSource(PydanticBaseSettingsSource):
    """Reads the settings from a YAML mapping file (lower priority than flags and env)."""

    def __init__(self, settings_cls: type[BaseSettings], path: Path | None) -> None:
        super().__init__(settings_cls)
        self._path = path

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        # Unused: __call__ returns the whole mapping at once.
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        if self._path is None:
            return {}
        text = self._path.expanduser().read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise ValueError(f"{self._path}: the master config must be a YAML mapping")
        return data


class ResourceManagerSettings(BaseModel):
    """Where trial processes run: ``local`` (children of the master on its machine) or ``ray``
    (an existing Ray cluster the master joins as a driver; needs ``pedl[ray]``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["local", "ray"] = Field(
        default="local", description="local: this machine; ray: an existing Ray cluster."
    )
    address: str | None = Field(
        default=None,
        max_length=1024,
        description="ray: the cluster's address (HOST:PORT of its head's GCS, e.g. "
        "10.0.0.5:6379, or ray://HOST:10001); default: the RAY_ADDRESS environment variable.",
    )
    placement_strategy: Literal["PACK", "SPREAD"] = Field(
        default="PACK",
        description="ray: how the workers of a multi-worker trial are placed (Ray's placement "
        "group strategies): PACK on as few nodes as fit, SPREAD over as many as there are.",
    )
    connect_timeout: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        description="ray: seconds one attempt to reach the cluster may take; while it cannot "
        "be reached, trials wait QUEUED with that reason and the master retries.",
    )


class MasterSettings(BaseSettings):
    """Settings of ``pedl master``.

    Precedence, highest first: keyword arguments (the CLI's flags), environment variables
    ``PEDL_<FIELD>`` (e.g. ``PEDL_DB_URL``), the YAML file named by ``config_file`` (keyword or
    ``PEDL_CONFIG_FILE``), the defaults. ``db_url`` and ``checkpoint_dir`` default to paths under
    ``home`` (the declared defaults are placeholders, always replaced by the home-derived
    values when the setting is not given). Unknown keys in the YAML file are errors.
    """

    model_config = SettingsConfigDict(env_prefix="PEDL_", extra="forbid")

    config_file: Path | None = Field(
        default=None, description="YAML file with any of these settings."
    )
    home: Path = Field(
        default=DEFAULT_HOME, description="PEDL home directory (database, checkpoints)."
    )
    db_url: str = Field(
        default="",
        description="SQLAlchemy URL; default sqlite:///<home>/pedl.db. "
        "postgresql:// URLs use psycopg 3.",
    )
    host: str = Field(default="127.0.0.1", description="Address the REST API listens on.")
    port: int = Field(default=8080, ge=0, le=65535, description="Port of the REST API.")
    advertised_url: str | None = Field(
        default=None,
        description="URL trial processes use to reach the master (a proxy or load balancer "
        "in front of it, or a name other machines resolve); default http://HOST:PORT, "
        "with 127.0.0.1 for a wildcard host.",
    )
    cpu_slots: int = Field(
        default_factory=_default_cpu_slots,
        ge=1,
        description="Slots offered on a machine without GPUs; default half the CPU cores.",
    )
    checkpoint_dir: Path = Field(
        default=DEFAULT_HOME / "checkpoints",
        description="Default checkpoint storage directory; default <home>/checkpoints.",
    )
    max_db_connections: int | None = Field(
        default=None,
        ge=RESERVED_DB_CONNECTIONS + 1,
        description="Database connections the master may hold at once (the pool's hard cap, "
        "no overflow); default 16 for SQLite, 20 for PostgreSQL.",
    )
    db_pool_timeout: float = Field(
        default=2.0,
        gt=0,
        description="Seconds a request waits for a pooled connection before it is answered "
        "503 (Retry-After).",
    )
    api_threads: int | None = Field(
        default=None,
        ge=1,
        description="Worker threads running the blocking request handlers; default "
        "max_db_connections - 4, less the bulk metric writers (3 on PostgreSQL by default), "
        "so every thread can hold a connection while the metric writers and the orchestrator "
        "keep theirs.",
    )
    max_user_requests: int | None = Field(
        default=None,
        ge=1,
        description="Requests without a trial token (SDK, CLI, dashboards) served at once; "
        "more wait their turn on the event loop, so the trials' requests always find a worker "
        "thread soon. Default api_threads - 2 (at least 1).",
    )
    max_requests_in_flight: int = Field(
        default=1024,
        ge=1,
        description="Requests being served at once; one more is answered 503 (Retry-After) "
        "at once.",
    )
    max_queued_reports: int = Field(
        default=4096,
        ge=1,
        description="Metric reports waiting for the metric writer; one more is answered 503 "
        "(Retry-After).",
    )
    retry_after_seconds: int = Field(
        default=1, ge=1, description="The Retry-After header of 503 answers, in seconds."
    )
    read_processes: int = Field(
        default_factory=lambda: 1 if (os.cpu_count() or 1) > 1 else 0,
        ge=0,
        le=16,
        description="Processes beside the master that serve the API's database reads (lists, "
        "trials, metrics, logs, checkpoints) so that they do not compete with the trials' "
        "reports for the master's one core; 0 serves everything in the master. Default 1 "
        "(0 on a one-core machine); none with an in-memory SQLite database.",
    )
    worker_reuse: bool = Field(
        default=True,
        description="Run the trials of an experiment one after another in warm worker "
        "processes that imported TensorFlow once (a trial's weights are the same as in a "
        "fresh process); false starts a fresh process for every trial.",
    )
    spare_workers: int = Field(
        default=2,
        ge=0,
        le=64,
        description="Warm workers started before any trial needs them, on free CPU slots (with "
        "worker reuse; each holds a Python process with TensorFlow imported, ~0.6 GB): the "
        "first trial of an experiment without environment variables on a slot starts in one "
        "without the framework's import; 0 starts none.",
    )
    worker_template: bool = Field(
        default=True,
        description="With worker reuse: fork the spare workers, and every warm worker of "
        "experiments without environment variables, from one process that imported TensorFlow "
        "once (a new worker then starts in milliseconds, and the workers share that import's "
        "memory); false starts each as a process of its own, with its own import.",
    )
    worker_heartbeat_timeout: float = Field(
        default=60.0,
        gt=0,
        le=86400,
        description="Seconds a worker process of a multi-worker trial may go without a "
        "heartbeat (a byte its daemon thread writes about every second) before the master "
        "treats it as hung (SIGSTOPped, stuck): the attempt ends, every worker is killed, and "
        "the trial restarts from its latest checkpoint. Default 60: above the longest start "
        "(TensorFlow's import on a busy machine) and GC or swap pauses seen, well under what "
        "a user would wait on a stuck trial.",
    )
    min_free_disk_bytes: int = Field(
        default=256 * MiB,
        ge=0,
        description="The free space, in bytes, the disk of the master's home (its database, "
        "logs and default checkpoints) must have for the master to start trial processes. "
        "Below it the master starts none (queued trials and GET /cluster say why, and the "
        "log), and a trial that fails meanwhile runs again later without spending one of its "
        "max_restarts; 0 checks nothing.",
    )
    trial_user: str = Field(
        default="nobody",
        max_length=256,
        description="OS user that trial processes and warm workers run as when the master "
        "runs as root (no supplementary groups, a private HOME and TMPDIR, umask 077); it "
        "must reach the checkpoint storage directories. '' runs them as the master's own "
        "user, as does a master that is not root (it says so at start). See docs/security.md.",
    )
    resource_manager: ResourceManagerSettings = Field(
        default_factory=ResourceManagerSettings,
        description="Where trial processes run: {type: local} (default) or {type: ray, "
        "address: HOST:PORT} (see docs/ray.md). As an environment variable, "
        'JSON: PEDL_RESOURCE_MANAGER=\'{"type": "ray", "address": "HOST:PORT"}\'.',
    )

    max_request_bytes: int = Field(
        default=16 * MiB,
        ge=1024,
        description="Largest request body of every route but experiment creation, in bytes; "
        "a larger one is answered 413 as soon as its Content-Length or its streamed bytes "
        "pass it, before it is read whole.",
    )
    max_upload_bytes: int | None = Field(
        default=None,
        ge=1024,
        description="Largest body of POST /experiments (the base64 model definition and the "
        "config), in bytes; larger: 413 while streaming. Default: room for the base64 of a "
        "max_model_definition_bytes archive and a 1 MiB config (129 MiB).",
    )
    max_upload_memory_bytes: int | None = Field(
        default=None,
        ge=1024,
        description="Request bodies the master holds at once, all requests together, in bytes "
        "(each counted at its Content-Length, or its streamed size, from before its first "
        "byte is read until it is answered); one that would pass it is answered 503 "
        "(Retry-After) at once. Experiment creations may take all of it but "
        "max_request_bytes, which stays free for the other routes (the trials' reports). "
        "Default: max_upload_bytes + max_request_bytes, at least 256 MiB; smaller is refused.",
    )
    max_model_definition_bytes: int = Field(
        default=model_def.DEFAULT_MAX_BYTES,
        ge=1024,
        description="Largest model definition archive (gzip-compressed tar) an experiment may "
        "carry, in bytes; larger: 422. `pedl experiment create` checks it before uploading.",
    )
    max_model_definition_unpacked_bytes: int = Field(
        default=model_def.DEFAULT_MAX_UNPACKED_BYTES,
        ge=1024,
        description="Largest total size of a model definition's files once unpacked, in "
        "bytes, counted from the archive's headers while it is decompressed; larger: 422.",
    )
    max_model_definition_members: int = Field(
        default=model_def.DEFAULT_MAX_MEMBERS,
        ge=1,
        description="Most files and directories in a model definition archive; more: 422, "
        "refused as soon as the one past the limit is read.",
    )
    max_model_definition_header_bytes: int = Field(
        default=model_def.DEFAULT_MAX_HEADER_BYTES,
        ge=1024,
        description="Most bytes of extended tar headers (GNU long names and links, PAX "
        "headers) in a model definition archive, in all; more: 422, refused from the size "
        "field of the header that passes it, before that header is read.",
    )
    max_model_definition_path_chars: int = Field(
        default=model_def.DEFAULT_MAX_PATH_CHARS,
        ge=16,
        description="Longest path of a file or directory in a model definition archive, in "
        "characters; longer: 422 naming the member (cut).",
    )
    max_json_depth: int = Field(
        default=64,
        ge=2,
        le=500,
        description="Deepest nesting of arrays and objects in a JSON request body; deeper: 400, "
        "before the body is parsed.",
    )
    storage_roots: list[Path] | None = Field(
        default=None,
        description="Directories under which an experiment config may place files on this "
        "machine (checkpoint_storage host_path, storage_path, container_path); a path outside "
        "them is refused (422). Default: home, checkpoint_dir and the system temporary "
        "directory.",
    )

    auth: bool = Field(
        default=True,
        description="Require a signed-in user (a session token) on every route but the health "
        "check, signing in and the web UI's files. false (`pedl master --no-auth`, for a "
        "laptop) makes every caller the administrator and is refused unless the master "
        "listens on loopback only.",
    )
    admin_password: SecretStr | None = Field(
        default=None,
        exclude=True,
        description="Password of the `admin` account: set at start (its sessions end when "
        "it changes). Unset: at its first start the master creates `admin` with a generated "
        "password, printed once.",
    )
    token_lifetime_hours: float = Field(
        default=168.0,
        gt=0,
        le=24 * 366,
        description="How long a session token (from signing in) is valid; default 7 days.",
    )
    token_cache_seconds: float = Field(
        default=5.0,
        ge=0,
        le=300,
        description="How long a process of the master trusts a session token it found valid "
        "without reading the database again (0: never). A logout, deactivation or password "
        "change takes effect at once: for this many seconds after it, the master serves the "
        "reads its read processes might answer from their caches itself.",
    )
    login_max_failures: int = Field(
        default=10,
        ge=1,
        description="Sign-in attempts for one username within login_failure_window_seconds "
        "before the next is answered 429 (Retry-After) without its password being checked; "
        "a successful sign-in clears the count. Kept in the master's memory.",
    )
    login_max_failures_per_address: int = Field(
        default=50,
        ge=1,
        description="The same, for the attempts from one client address, whatever the "
        "username (higher: several people may share an address behind NAT or a proxy).",
    )
    login_failure_window_seconds: float = Field(
        default=300.0,
        gt=0,
        le=86_400,
        description="The window, in seconds, in which failed sign-in attempts are counted.",
    )

    @field_validator("trial_user")
    @classmethod
    def _existing_user(cls, value: str) -> str:
        # Only a master running as root switches users (see pedl.master.rm._trial_user).
        if value and os.name == "posix" and os.geteuid() == 0:
            try:
                pwd.getpwnam(value)
            except KeyError:
                raise ValueError(
                    f"{value!r} is no user of this machine: name an existing unprivileged "
                    "user (e.g. nobody), or '' to run trials as the master's own user"
                ) from None
        return value

    @field_validator("advertised_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        url = value.strip().rstrip("/")
        scheme, _, rest = url.partition("://")
        if scheme not in ("http", "https") or not rest or rest.startswith("/"):
            raise ValueError(f"must be an http:// or https:// URL with a host, not {value!r}")
        return url

    @model_validator(mode="after")
    def _no_auth_on_loopback_only(self) -> MasterSettings:
        if not self.auth and not is_loopback(self.host):
            raise ValueError(
                f"auth is off (--no-auth), so the master may listen on loopback only "
                f"(127.0.0.1, ::1 or localhost), not on {self.host!r}"
            )
        return self

    @model_validator(mode="before")
    @classmethod
    def _derive_defaults(cls, data: Any) -> Any:
        if isinstance(data, dict):
            home = Path(data.get("home") or DEFAULT_HOME).expanduser()
            if not data.get("db_url"):
                data["db_url"] = f"sqlite:///{home / 'pedl.db'}"
            if not data.get("checkpoint_dir"):
                data["checkpoint_dir"] = home / "checkpoints"
        return data

    @property
    def db_backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"``, from ``db_url``."""
        scheme = self.db_url.split(":", 1)[0].split("+", 1)[0]
        return "postgresql" if scheme in ("postgresql", "postgres") else scheme

    @property
    def db_connections(self) -> int:
        """``max_db_connections``, or the default for the backend."""
        if self.max_db_connections is not None:
            return self.max_db_connections
        return DEFAULT_DB_CONNECTIONS.get(self.db_backend, DEFAULT_DB_CONNECTIONS["sqlite"])

    @property
    def metric_writers(self) -> int:
        """The metric writer threads: 1 on SQLite; on PostgreSQL 1 for small reports and
        :data:`POSTGRESQL_BULK_WRITERS` for big ones, fewer where fewer than 4 connections per
        bulk writer are left beside the reserved ones."""
        if self.db_backend != "postgresql":
            return 1
        spare = self.db_connections - RESERVED_DB_CONNECTIONS
        return 1 + min(POSTGRESQL_BULK_WRITERS, spare // 4)

    @property
    def worker_threads(self) -> int:
        """``api_threads``, or ``db_connections`` minus the reserved ones and the bulk metric
        writers."""
        if self.api_threads is not None:
            return self.api_threads
        reserved = RESERVED_DB_CONNECTIONS + self.metric_writers - 1
        return max(1, self.db_connections - reserved)

    @property
    def user_request_slots(self) -> int:
        """``max_user_requests``, or ``worker_threads - 2`` (at least 1)."""
        if self.max_user_requests is not None:
            return self.max_user_requests
        return max(1, self.worker_threads - 2)

    @property
    def read_process_count(self) -> int:
        """``read_processes``, or 0 when the database lives in this process's memory."""
        path = self.db_url.split("://", 1)[-1].split("?", 1)[0]
        in_memory = self.db_backend == "sqlite" and (
            path in ("", "/:memory:") or "mode=memory" in self.db_url
        )
        return 0 if in_memory else self.read_processes

    @property
    def upload_bytes(self) -> int:
        """``max_upload_bytes``, or the base64 size of a ``max_model_definition_bytes``
        archive plus 1 MiB for the config."""
        if self.max_upload_bytes is not None:
            return self.max_upload_bytes
        return -(-self.max_model_definition_bytes // 3) * 4 + MiB

    @property
    def upload_memory_bytes(self) -> int:
        """``max_upload_memory_bytes``, or ``upload_bytes + max_request_bytes`` (at least
        :data:`DEFAULT_UPLOAD_MEMORY_BYTES`)."""
        if self.max_upload_memory_bytes is not None:
            return self.max_upload_memory_bytes
        return max(DEFAULT_UPLOAD_MEMORY_BYTES, self.upload_bytes + self.max_request_bytes)

    @model_validator(mode="after")
    def _upload_memory_holds_an_upload(self) -> MasterSettings:
        least = self.upload_bytes + self.max_request_bytes
        if self.max_upload_memory_bytes is not None and self.max_upload_memory_bytes < least:
            raise ValueError(
                f"max_upload_memory_bytes ({self.max_upload_memory_bytes}) must hold the "
                f"largest experiment upload and the largest other request at once: at least "
                f"max_upload_bytes + max_request_bytes = {least}"
            )
        return self

    @property
    def allowed_storage_roots(self) -> tuple[Path, ...]:
        """``storage_roots``, or home, ``checkpoint_dir`` and the system temporary directory;
        each made absolute with symbolic links resolved."""
        roots = self.storage_roots
        if roots is None:
            roots = [self.home, self.checkpoint_dir, Path(tempfile.gettempdir())]
        return tuple(Path(os.path.realpath(root.expanduser())) for root in roots)

    @field_validator("home", "checkpoint_dir", "config_file")
    @classmethod
    def _expand_user(cls, value: Path | None) -> Path | None:
        return None if value is None else value.expanduser()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        path: str | os.PathLike[str] | None = None
        if isinstance(init_settings, InitSettingsSource):
            path = init_settings.init_kwargs.get("config_file")
        if path is None:
            path = os.environ.get(CONFIG_FILE_ENV) or None
        yaml_source = _YamlFileSource(settings_cls, None if path is None else Path(path))
        return (init_settings, env_settings, yaml_source)
