"""Bodies of ``/workspaces`` and ``/projects``: what they take and what they answer.

Names (of workspaces and projects) are 1 to 128 characters, neither starting nor ending with
a space, without control characters; a project's key is 1 to 5 letters and digits
(Determined's ``ProjectKeyRegex``), stored upper case; a description at most 10,000
characters. Each bad value is a 422 naming its field.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

MAX_NAME_CHARS = 128
MAX_DESCRIPTION_CHARS = 10_000
KEY_PATTERN = r"^[A-Za-z0-9]{1,5}$"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _check_name(value: str) -> str:
    if value != value.strip():
        raise ValueError("must not start or end with whitespace")
    if _CONTROL.search(value):
        raise ValueError("must not hold control characters (newlines, tabs, NUL)")
    return value


def _check_description(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not hold NUL")
    return value


Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS), AfterValidator(_check_name)]
"""A workspace's or project's name."""
Key = Annotated[
    str,
    Field(pattern=KEY_PATTERN, description="1 to 5 letters and digits (stored upper case)."),
]
Description = Annotated[
    str, Field(max_length=MAX_DESCRIPTION_CHARS), AfterValidator(_check_description)
]


class WorkspaceCreate(BaseModel):
    """Body of ``POST /workspaces``."""

    model_config = ConfigDict(extra="forbid")

    name: Name = Field(description="Unique among workspaces; 1 to 128 characters.")


class WorkspacePatch(BaseModel):
    """Body of ``PATCH /workspaces/{id}``: what to change (a field left out stays)."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = Field(default=None, description="A new, unused name.")


class WorkspacePublic(BaseModel):
    """A workspace as the API shows it."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    archived: bool
    immutable: bool = Field(description="The default workspace: never renamed or removed.")
    owner: str = Field(description="Its creator: with administrators, who may change it.")
    created_at: datetime
    num_projects: int = Field(default=0, description="How many projects it holds.")


class ProjectCreate(BaseModel):
    """Body of ``POST /workspaces/{id}/projects``."""

    model_config = ConfigDict(extra="forbid")

    name: Name = Field(description="Unique within the workspace; 1 to 128 characters.")
    description: Description = ""
    key: Key | None = Field(
        default=None,
        description="Unique among projects; left out: up to three letters of the name and "
        "random ones (Determined's rule).",
    )


class ProjectPatch(BaseModel):
    """Body of ``PATCH /projects/{id}``: what to change (a field left out stays)."""

    model_config = ConfigDict(extra="forbid")

    name: Name | None = None
    description: Description | None = None
    key: Key | None = None


class ProjectPublic(BaseModel):
    """A project as the API shows it."""

    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    key: str
    description: str
    workspace_id: int
    workspace_name: str = ""
    archived: bool
    immutable: bool = Field(description="The default project: never renamed or removed.")
    owner: str
    created_at: datetime
    num_experiments: int = Field(default=0, description="How many experiments it holds.")
    num_active_experiments: int = Field(
        default=0, description="How many of them are ACTIVE (Determined's count)."
    )


class ExperimentMove(BaseModel):
    """Body of ``POST /experiments/{id}/move``."""

    model_config = ConfigDict(extra="forbid")

    destination_project_id: int = Field(ge=1, le=2**31 - 1, description="The project.")
