"""A checkpoint: its record, its files, and downloading them."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
import tarfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from pedl.client._errors import NotFoundError, PEDLError
from pedl.client._session import Session

if TYPE_CHECKING:
    from pedl.client._trial import TrialMetrics

CHUNK_BYTES = 1024 * 1024


class DownloadMode(StrEnum):
    """How :meth:`Checkpoint.download` reads the files (Determined's ``DownloadMode``):
    ``DIRECT`` from the checkpoint storage (a path readable here), ``MASTER`` through the
    master, ``AUTO`` directly where it can, else through the master."""

    DIRECT = "direct"
    MASTER = "master"
    AUTO = "auto"


@dataclass
class CheckpointTrainingMetadata:
    """What trained a checkpoint (Determined's ``CheckpointTrainingMetadata``): its
    experiment's config and id, its trial's id and hyperparameters, and the validation
    metrics reported at its batch (``{"avgMetrics": {...}}``; ``{}`` when none)."""

    experiment_config: dict[str, Any]
    experiment_id: int
    trial_id: int
    hparams: dict[str, Any]
    validation_metrics: dict[str, Any]


class _CheckpointFields(BaseModel):
    model_config = ConfigDict(extra="ignore")

    uuid: str
    trial_id: int
    experiment_id: int
    total_batches: int
    state: str
    metadata: dict[str, Any]
    resources: dict[str, int]
    size: int
    created_at: datetime
    validation_metrics: dict[str, Any] | None = None


class Checkpoint:
    """A checkpoint as the master last described it, and the way to its files.

    Attributes mirror the API's ``CheckpointPublic``: ``uuid``, ``trial_id``,
    ``experiment_id``, ``total_batches``, ``state`` (``ACTIVE``, ``COMPLETED``, ``ERROR``,
    ``DELETED``), ``metadata``, ``resources`` (relative path -> bytes), ``size``,
    ``created_at`` and ``validation_metrics`` (those reported at the same batch, or ``None``).
    """

    def __init__(self, session: Session, data: Mapping[str, Any]) -> None:
        self._session = session
        self._load(data)

    def _load(self, data: Mapping[str, Any]) -> None:
        self._record = dict(data)
        fields = _CheckpointFields.model_validate(data)
        self.uuid = fields.uuid
        self.trial_id = fields.trial_id
        self.experiment_id = fields.experiment_id
        self.total_batches = fields.total_batches
        self.state = fields.state
        self.metadata = fields.metadata
        self.resources = fields.resources
        self.size = fields.size
        self.created_at = fields.created_at
        self.validation_metrics = fields.validation_metrics
        self.report_time = fields.created_at.isoformat().replace("+00:00", "Z")
        """When it was reported (Determined's ``report_time``: RFC 3339 text)."""
        self._training: CheckpointTrainingMetadata | None = None

    @property
    def training(self) -> CheckpointTrainingMetadata | None:
        """Its experiment's config and id, its trial's id and hyperparameters and its
        validation metrics, as Determined's ``Checkpoint.training`` (fetched once); ``None``
        once its experiment is deleted (a model version kept it)."""
        if self._training is None:
            try:
                experiment = self._session.get(f"/experiments/{self.experiment_id}")
                trial = self._session.get(f"/trials/{self.trial_id}")
            except NotFoundError:
                return None
            metrics = self.validation_metrics
            self._training = CheckpointTrainingMetadata(
                experiment_config=dict(experiment["config"]),
                experiment_id=self.experiment_id,
                trial_id=self.trial_id,
                hparams=dict(trial["hparams"]),
                validation_metrics={"avgMetrics": dict(metrics)} if metrics else {},
            )
        return self._training

    def __repr__(self) -> str:
        return f"Checkpoint(uuid={self.uuid!r}, trial_id={self.trial_id}, state={self.state!r})"

    def to_dict(self) -> dict[str, Any]:
        """The API's JSON record as last fetched."""
        return dict(self._record)

    def metric(self, name: str) -> float | None:
        """The validation metric ``name`` at this checkpoint as a finite number, else ``None``."""
        return _number((self.validation_metrics or {}).get(name))

    def reload(self) -> None:
        """Fetch the checkpoint's record again (its state, its metadata)."""
        self._load(self._session.get(f"/checkpoints/{self.uuid}"))

    def get_metadata(self) -> dict[str, Any]:
        """The checkpoint's metadata as the master holds it now."""
        self.reload()
        return dict(self.metadata)

    def add_metadata(self, metadata: Mapping[str, Any]) -> None:
        """Set these top-level keys of the checkpoint's metadata (a key already there is
        replaced), as Determined's ``add_metadata``; the files in storage are not changed.
        The experiment's owner or an administrator."""
        self._change_metadata({"add": dict(metadata)})

    def remove_metadata(self, keys: Iterable[str]) -> None:
        """Drop these top-level keys of the checkpoint's metadata (absent ones are ignored)."""
        self._change_metadata({"remove": list(keys)})

    def _change_metadata(self, change: dict[str, Any]) -> None:
        record = self._session.patch(f"/checkpoints/{self.uuid}/metadata", json=change)
        self._load(record)

    def write_metadata_file(self, path: str | os.PathLike[str]) -> None:
        """Write the checkpoint's metadata (as last fetched) to ``path`` as JSON."""
        with open(path, "w", encoding="utf-8") as file:
            json.dump(self.metadata, file, indent=2)

    def delete(self) -> None:
        """Delete the checkpoint's files from storage; it stays listed as DELETED. Refused
        (:class:`PEDLError` with the reason) for one registered in the model registry or the
        latest checkpoint of a trial that may still run."""
        self._session.delete(f"/checkpoints/{self.uuid}")
        self.reload()

    def get_metrics(self, group: str | None = None) -> Iterator[TrialMetrics]:
        """The metrics reported by the trials that started from this checkpoint (warm
        start), of ``group`` (``"training"``, ``"validation"``; ``None``: both), trial after
        trial: what Determined returns for the tasks that report using a checkpoint."""
        from pedl.client._trial import iter_metrics_of  # _trial imports this module

        groups = [group] if group else ["training", "validation"]
        for trial_id in self._session.get(f"/checkpoints/{self.uuid}/trials"):
            for name in groups:
                yield from iter_metrics_of(self._session, int(trial_id), name)

    def list_files(self) -> dict[str, int]:
        """Every file of the checkpoint in storage, as the master sees it: {path: bytes}."""
        body = self._session.get(f"/checkpoints/{self.uuid}/files")
        return {str(path): int(size) for path, size in body["files"].items()}

    def remove_files(self, globs: Iterable[str]) -> None:
        """Remove the checkpoint's files matching any of ``globs`` (``fnmatch`` patterns on
        their paths, ``*`` matching ``/`` too, as Determined's) from storage; the master
        updates its ``resources`` and marks it PARTIALLY_DELETED (DELETED when no file is
        left; either way no trial resumes from it). No globs:
        nothing is removed, the resources are read again from storage. The experiment's
        owner or an administrator; refused (:class:`PEDLError` 409, with the reason) for a
        checkpoint a model version holds or a running trial's latest."""
        record = self._session.post(
            f"/checkpoints/{self.uuid}/remove-files", json={"globs": list(globs)}
        )
        self._load(record)

    def download(
        self,
        path: str | os.PathLike[str] | None = None,
        mode: DownloadMode | str = DownloadMode.AUTO,
        *,
        local: bool = True,
    ) -> Path:
        """Copy the checkpoint's files into directory ``path`` (default ``checkpoints/<uuid>``)
        and return it. ``mode`` (a :class:`DownloadMode`) as Determined's: ``DIRECT`` only
        from a storage path readable here (:class:`PEDLError` otherwise), ``MASTER`` through
        the master, ``AUTO`` (``local=False``: as ``MASTER``) as follows.

        The directory is created if needed; files already there with the same names are
        replaced, others are left alone. When ``local`` is true and the experiment's
        ``checkpoint_storage`` is a file system path readable from here (``shared_fs``,
        ``directory``), the files are copied directly; otherwise (``s3``, or a path not
        readable here) they come through the master as one tar stream
        (``GET /checkpoints/{uuid}/archive``). Raises :class:`PEDLError` when the master has
        no such checkpoint or its files are gone from storage.
        """
        how = DownloadMode(mode)
        target = Path("checkpoints", self.uuid) if path is None else Path(path)
        direct = how is DownloadMode.DIRECT or (how is DownloadMode.AUTO and local)
        source = self._local_directory() if direct else None
        if how is DownloadMode.DIRECT and source is None:
            raise PEDLError(
                f"checkpoint {self.uuid}: its storage is not a path readable here; download it "
                "through the master (mode MASTER or AUTO)",
                field="mode",
            )
        target.mkdir(parents=True, exist_ok=True)
        if source is not None:
            shutil.copytree(source, target, dirs_exist_ok=True)
            return target
        self._fetch_archive(target)
        return target

    def _local_directory(self) -> Path | None:
        """The checkpoint's directory when its storage is a readable local path, else None."""
        try:
            body = self._session.get(f"/experiments/{self.experiment_id}")
        except NotFoundError:  # deleted: a model version kept the checkpoint
            return None
        # The config's models and the storage backends: only where files are read here.
        from pedl.config import (
            ConfigError,
            DirectoryStorageConfig,
            SharedFSStorageConfig,
            parse_config,
        )
        from pedl.storage import SharedFSStorage, make_storage

        try:
            config = parse_config(body["config"]).checkpoint_storage
        except (ConfigError, ValueError):
            return None
        # Only a file system path is read from here: S3's credentials are masked in the
        # master's answer, so its files come through the master.
        if not isinstance(config, SharedFSStorageConfig | DirectoryStorageConfig):
            return None
        storage = make_storage(config)
        if not isinstance(storage, SharedFSStorage):
            return None
        try:
            directory = storage.path_of(self.uuid)
        except ValueError:
            return None
        if directory.is_dir() and os.access(directory, os.R_OK | os.X_OK):
            return directory
        return None

    def _fetch_archive(self, target: Path) -> None:
        """Stream ``GET /checkpoints/{uuid}/archive`` and unpack it into ``target``."""
        with self._session.stream(f"/checkpoints/{self.uuid}/archive") as response:
            reader = io.BufferedReader(_ByteStream(response.iter_bytes()), CHUNK_BYTES)
            with tarfile.open(fileobj=reader, mode="r|") as archive:
                for member in archive:
                    if not member.isfile():
                        raise PEDLError(
                            f"checkpoint {self.uuid}: the archive holds {member.name!r}, "
                            "which is not a regular file"
                        )
                    try:
                        archive.extract(member, target, filter="data")
                    except tarfile.FilterError as err:
                        raise PEDLError(
                            f"checkpoint {self.uuid}: unsafe path {member.name!r} in the archive"
                        ) from err


class _ByteStream(io.RawIOBase):
    """A readable binary stream over an iterator of byte chunks."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._pending = chunk
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def best_checkpoints(
    checkpoints: Iterable[Checkpoint], metric: str, smaller_is_better: bool, n: int
) -> list[Checkpoint]:
    """The ``n`` best COMPLETED checkpoints by validation ``metric``, best first.

    Checkpoints without a finite value of ``metric`` are left out; ties go to the later
    checkpoint (more batches).
    """
    sign = 1.0 if smaller_is_better else -1.0
    scored = [
        (sign * value, -c.total_batches, c.uuid, c)
        for c in checkpoints
        if c.state == "COMPLETED" and (value := c.metric(metric)) is not None
    ]
    scored.sort(key=lambda item: item[:3])
    return [item[3] for item in scored[:n]]


def resolve_sort(
    experiment: Mapping[str, Any], sort_by: str | None, smaller_is_better: bool | None
) -> tuple[str | None, bool]:
    """The metric and direction to rank checkpoints by, given an experiment's JSON record.

    ``sort_by`` defaults to the searcher metric; ``smaller_is_better`` to the searcher's
    direction when the metric is the searcher's, and to true otherwise.
    """
    searcher_metric = experiment.get("searcher_metric")
    metric = sort_by if sort_by is not None else searcher_metric
    if smaller_is_better is None:
        smaller_is_better = (
            bool(experiment.get("smaller_is_better", True)) if metric == searcher_metric else True
        )
    return metric, smaller_is_better
