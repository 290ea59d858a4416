"""``/api/v1/templates``: config templates stored on the master (``det template``).

A template is a named mapping; ``pedl experiment create --template NAME`` merges it under
the experiment's config as Determined does (the config's own values win, mappings merge key
by key). Any signed-in user reads and creates templates; its creator or an administrator
replaces or removes one (403 otherwise).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Response
from pydantic import BaseModel, ConfigDict, Field

from pedl.config import MAX_CONFIG_BYTES
from pedl.config._limits import shape_problem
from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    CurrentUser,
    require_owner,
    require_user,
)
from pedl.master.api._deps import ReadSession, WriteSession
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.db import templates as templates_repo
from pedl.master.db._errors import NotFoundError

router = APIRouter(
    prefix="/templates",
    tags=["templates"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
)

TemplateName = Annotated[
    str, Path(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]


class TemplatePublic(BaseModel):
    """A template as the API shows it."""

    model_config = ConfigDict(from_attributes=True)

    name: str
    config: dict[str, Any]
    owner: str
    created_at: datetime
    updated_at: datetime


class TemplateBody(BaseModel):
    """Body of ``PUT /templates/{name}``: the template's mapping."""

    model_config = ConfigDict(extra="forbid")

    config: dict[str, Any] = Field(description="Any part of an experiment config.")


@router.get("", dependencies=[require_user])
def list_templates(session: ReadSession) -> list[TemplatePublic]:
    """Every template, by name."""
    return [TemplatePublic.model_validate(t) for t in templates_repo.list_templates(session)]


@router.get("/{name}", dependencies=[require_user])
def get_template(name: TemplateName, session: ReadSession) -> TemplatePublic:
    """One template (404 if none)."""
    return TemplatePublic.model_validate(templates_repo.get_template(session, name))


@router.put("/{name}", responses=OWNER_RESPONSES)
def put_template(
    name: TemplateName, body: TemplateBody, session: WriteSession, user: CurrentUser
) -> TemplatePublic:
    """Create the template or replace its config (its creator or an administrator). 422
    for a mapping over the bounds of an experiment config (size, nesting, node count)."""
    problem = shape_problem(body.config)
    if problem is None and len(repr(body.config)) > MAX_CONFIG_BYTES:
        problem = ((), f"the template is larger than {MAX_CONFIG_BYTES:,} bytes")
    if problem is not None:
        where = ".".join(str(p) for p in problem[0])
        raise ApiError(422, problem[1], field=f"config.{where}" if where else "config")
    try:
        existing = templates_repo.get_template(session, name)
    except NotFoundError:
        existing = None
    if existing is not None:
        require_owner(user, existing.owner, f"template {name}")
    template = templates_repo.put_template(session, name, body.config, user.username)
    return TemplatePublic.model_validate(template)


@router.delete("/{name}", status_code=204, responses=OWNER_RESPONSES)
def delete_template(name: TemplateName, session: WriteSession, user: CurrentUser) -> Response:
    """Remove the template (its creator or an administrator)."""
    require_owner(user, templates_repo.get_template(session, name).owner, f"template {name}")
    templates_repo.delete_template(session, name)
    return Response(status_code=204)
