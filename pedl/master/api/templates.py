"""``/api/v1/templates``: config templates stored on the master (``det template``).

A template is a named mapping; ``pedl experiment create --template NAME`` merges it under
the experiment's config as Determined does (the config's own values win, mappings merge key
by key). Any signed-in user reads and creates templates; its creator or an administrator
replaces or removes one (403 otherwise).

A template is held to an experiment config's bounds as a document (size, nesting, node count)
and to its values (:func:`pedl.config._limits.value_problems`: no NaN or infinite number, no
integer beyond 64 bits, no NUL or lone surrogate), each refused with 422 naming its field. It
is shown as an experiment's config is (:func:`pedl.config.mask_config`): its secrets masked,
to every user, its creator included; the stored template keeps the real values, which reach
only the trials of the experiments it is merged into (the master merges it, ``POST
/experiments`` with ``template``). A ``PUT`` stores what it is given, masks included, as a
config is stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Path, Response
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from pedl.config import MAX_CONFIG_BYTES, mask_config
from pedl.config._issues import Problem, format_path
from pedl.config._limits import shape_problem, value_problems
from pedl.db import templates as templates_repo
from pedl.db._errors import NotFoundError
from pedl.master.api._auth import (
    OWNER_RESPONSES,
    USER_AUTH_RESPONSES,
    CurrentUser,
    require_owner,
    require_user,
)
from pedl.master.api._deps import ReadSession, WriteSession
from pedl.master.api._errors import ERROR_RESPONSES, ApiError
from pedl.master.api._schemas import ErrorIssue

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
    config: Annotated[dict[str, Any], AfterValidator(mask_config)] = Field(
        description="The template's mapping, its secrets masked as `********` as in an "
        "experiment's config: environment variables and checkpoint storage fields whose "
        "names look secret, passwords in URLs (the trials get the real values)."
    )
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
    for a mapping over the bounds of an experiment config (size, nesting, node count), or
    holding a value no config may (a NaN or infinite number, an integer beyond 64 bits, a NUL
    or a lone surrogate), naming the field."""
    _check_template(body.config)
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


def _check_template(config: dict[str, Any]) -> None:
    """422 naming the field for a template over a config's bounds or holding a value no config
    may hold (the checks :func:`pedl.config.parse_config` makes of a config as a document)."""
    shape = shape_problem(config)
    if shape is None and len(repr(config)) > MAX_CONFIG_BYTES:
        shape = ((), f"the template is larger than {MAX_CONFIG_BYTES:,} bytes")
    problems: list[Problem] = [shape] if shape is not None else value_problems(config)
    if not problems:
        return
    issues = [
        ErrorIssue(field=f"config.{format_path(path)}" if path else "config", message=message)
        for path, message in problems
    ]
    count = len(issues)
    summary = f"invalid template ({count} problem{'s' if count != 1 else ''})"
    first = issues[0]
    raise ApiError(
        422, f"{summary}: {first.field}: {first.message}", field=first.field, issues=issues
    )
