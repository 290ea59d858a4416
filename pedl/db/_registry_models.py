"""The model registry's tables: named models and their numbered versions, each version one
checkpoint (Determined's ``det model``).

A version holds its checkpoint with a foreign key that refuses the checkpoint row's deletion
(``ON DELETE RESTRICT``): retention, ``pedl checkpoint delete`` and experiment deletion skip
registered checkpoints, and the key makes any path that forgot to a database error rather
than a dangling version. Deleting a model deletes its versions (``ON DELETE CASCADE``), never
their checkpoints.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from pedl.db._models import Base
from pedl.db._types import JSONType, utcnow


class RegisteredModel(Base):
    """A named model in the registry."""

    __tablename__ = "models"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(255), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    notes: Mapped[str] = mapped_column(Text, default="")
    labels: Mapped[list[str]] = mapped_column(JSONType, default=list)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)
    owner: Mapped[str] = mapped_column(String(128))
    """The username of its creator: with admins, the only one who may change or delete it."""
    archived: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ModelVersion(Base):
    """Version ``version`` (1, 2, ...) of a model: one registered checkpoint."""

    __tablename__ = "model_versions"
    __table_args__ = (UniqueConstraint("model_id", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    model_id: Mapped[int] = mapped_column(ForeignKey("models.id", ondelete="CASCADE"), index=True)
    version: Mapped[int] = mapped_column(Integer)
    checkpoint_uuid: Mapped[str] = mapped_column(
        ForeignKey("checkpoints.uuid", ondelete="RESTRICT"), index=True
    )
    name: Mapped[str | None] = mapped_column(String(255))
    comment: Mapped[str] = mapped_column(Text, default="")
    notes: Mapped[str] = mapped_column(Text, default="")
    labels: Mapped[list[str]] = mapped_column(JSONType, default=list)
    metadata_: Mapped[dict[str, Any]] = mapped_column("metadata", JSONType, default=dict)
    owner: Mapped[str] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
