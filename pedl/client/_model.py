"""The model registry in the SDK, under Determined's names: :class:`Model` (a named model)
and :class:`ModelVersion` (one registered checkpoint of it)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pedl.client._checkpoint import Checkpoint
from pedl.client._errors import NotFoundError
from pedl.client._session import Session

if TYPE_CHECKING:
    from pedl.client._trial import TrialMetrics


class ModelSortBy(StrEnum):
    """What :meth:`Client.get_models` sorts by (Determined's ``ModelSortBy``)."""

    NAME = "name"
    DESCRIPTION = "description"
    CREATION_TIME = "created_at"
    LAST_UPDATED_TIME = "updated_at"
    ID = "id"


def _time(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def model_path(ref: str | int) -> str:
    """The API path of a model by name or id."""
    return f"/models/{quote(str(ref), safe='')}"


class ModelVersion:
    """Version ``model_version`` of the model ``model_name``: ``checkpoint`` is the registered
    :class:`Checkpoint`. Also ``id``, ``model_id``, ``name``, ``comment``, ``notes``,
    ``labels``, ``metadata``, ``username`` (who registered it), ``creation_time``,
    ``last_updated_time``."""

    def __init__(self, session: Session, record: Mapping[str, Any]) -> None:
        self._session = session
        self._load(record)

    def _load(self, record: Mapping[str, Any]) -> None:
        session = self._session
        self._record = dict(record)
        self.id = int(record["id"])
        self.model_id = int(record["model_id"])
        self.model_name = str(record["model_name"])
        self.model_version = int(record["version"])
        self.checkpoint = Checkpoint(session, record["checkpoint"])
        self.name: str | None = record.get("name")
        self.comment = str(record.get("comment", ""))
        self.notes = str(record.get("notes", ""))
        self.labels = list(record.get("labels", []))
        self.metadata = dict(record.get("metadata", {}))
        self.username = str(record["owner"])
        self.creation_time = _time(record["created_at"])
        self.last_updated_time = _time(record["updated_at"])

    def __repr__(self) -> str:
        return (
            f"ModelVersion(model_name={self.model_name!r}, model_version={self.model_version}, "
            f"checkpoint={self.checkpoint.uuid!r})"
        )

    def to_json(self) -> dict[str, Any]:
        """The API's JSON record as last fetched."""
        return dict(self._record)

    @property
    def _path(self) -> str:
        return f"{model_path(self.model_id)}/versions/{self.model_version}"

    def reload(self) -> None:
        """Fetch the version again."""
        self._load(self._session.get(self._path))

    def _patch(self, **changes: Any) -> None:
        self._load(self._session.patch(self._path, json=changes))

    def set_name(self, name: str) -> None:
        """Set the version's name (who registered it, the model's creator or an
        administrator)."""
        self._patch(name=name)

    def set_notes(self, notes: str) -> None:
        """Replace the version's notes."""
        self._patch(notes=notes)

    def iter_metrics(self, group: str | None = None) -> Iterator[TrialMetrics]:
        """The metrics of the trials that started from this version's checkpoint, of
        ``group`` (``None``: training and validation): :meth:`Checkpoint.get_metrics`."""
        return self.checkpoint.get_metrics(group)

    def get_metrics(self, group: str | None = None) -> Iterator[TrialMetrics]:
        """:meth:`iter_metrics` under Determined's deprecated name."""
        return self.iter_metrics(group)

    def delete(self) -> None:
        """Delete this version (its checkpoint stays); who registered it, the model's
        creator or an administrator."""
        self._session.delete(f"{model_path(self.model_name)}/versions/{self.model_version}")


class Model:
    """A named model in the registry (Determined's ``Model``): ``model_id``, ``name``,
    ``description``, ``notes``, ``labels``, ``metadata``, ``username`` (its creator),
    ``archived``, ``creation_time``, ``last_updated_time``, ``num_versions``."""

    def __init__(self, session: Session, record: Mapping[str, Any]) -> None:
        self._session = session
        self._load(record)

    def _load(self, record: Mapping[str, Any]) -> None:
        self._record = dict(record)
        self.model_id = int(record["id"])
        self.name = str(record["name"])
        self.description = str(record["description"])
        self.notes = str(record["notes"])
        self.labels = list(record["labels"])
        self.metadata = dict(record["metadata"])
        self.username = str(record["owner"])
        self.archived = bool(record["archived"])
        self.creation_time = _time(record["created_at"])
        self.last_updated_time = _time(record["updated_at"])
        self.num_versions = int(record["num_versions"])

    def __repr__(self) -> str:
        return f"Model(name={self.name!r}, model_id={self.model_id})"

    @property
    def _path(self) -> str:
        return model_path(self.model_id)

    def to_json(self) -> dict[str, Any]:
        """The API's JSON record as last fetched."""
        return dict(self._record)

    def reload(self) -> None:
        """Fetch the model's record again."""
        self._load(self._session.get(self._path))

    def get_version(self, version: int = -1) -> ModelVersion | None:
        """Version ``version`` (``-1``, the default: the latest), or ``None`` if the model has
        no such version (Determined's behaviour)."""
        try:
            record = self._session.get(f"{self._path}/versions/{int(version)}")
        except NotFoundError:
            return None
        return ModelVersion(self._session, record)

    def get_versions(self, order_by: str = "DESC") -> list[ModelVersion]:
        """Every version, newest first (``order_by="ASC"``: oldest first)."""
        order = "asc" if str(order_by).upper().startswith("ASC") else "desc"
        records = self._session.get(f"{self._path}/versions", params={"order": order})
        return [ModelVersion(self._session, record) for record in records]

    def register_version(self, checkpoint_uuid: str) -> ModelVersion:
        """Register the (COMPLETED) checkpoint as the model's next version; from then on no
        retention rule or experiment delete removes it."""
        record = self._session.post(
            f"{self._path}/versions", json={"checkpoint_uuid": str(checkpoint_uuid)}
        )
        self.reload()
        return ModelVersion(self._session, record)

    def _patch(self, **changes: Any) -> None:
        self._load(self._session.patch(self._path, json=changes))

    def set_description(self, description: str) -> None:
        self._patch(description=description)

    def set_notes(self, notes: str) -> None:
        self._patch(notes=notes)

    def set_labels(self, labels: Iterable[str]) -> None:
        self._patch(labels=list(labels))

    def add_label(self, label: str) -> None:
        self._patch(labels=[*self.labels, label])

    def remove_label(self, label: str) -> None:
        self._patch(labels=[item for item in self.labels if item != label])

    def add_metadata(self, metadata: Mapping[str, Any]) -> None:
        """Set these top-level metadata keys (replacing)."""
        self._patch(metadata={**self.metadata, **metadata})

    def remove_metadata(self, keys: Iterable[str]) -> None:
        """Drop these top-level metadata keys."""
        gone = set(keys)
        self._patch(metadata={k: v for k, v in self.metadata.items() if k not in gone})

    def archive(self) -> None:
        self._patch(archived=True)

    def unarchive(self) -> None:
        self._patch(archived=False)

    def delete(self) -> None:
        """Delete the model and its versions (their checkpoints stay); its creator or an
        administrator."""
        self._session.delete(self._path)
