"""``/api/v1/master/config``: the settings this master runs with (``det master config``), for
administrators, with its secrets hidden: the administrator's initial password is not in it,
and URLs (the database's) show no password; and the level of its own log, which ``det master
config set --log.level`` changes until the master restarts."""

from __future__ import annotations

import contextlib
import logging
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import make_url
from sqlalchemy.exc import ArgumentError

from pedl.master._settings import MasterSettings
from pedl.master.api._auth import USER_AUTH_RESPONSES, require_admin
from pedl.master.api._errors import ERROR_RESPONSES

router = APIRouter(
    tags=["master"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
    dependencies=[Depends(require_admin)],
)


def shown_settings(settings: MasterSettings) -> dict[str, Any]:
    """The settings as JSON with passwords masked: secret settings (the administrator's
    initial password) are left out or shown as pydantic's ``**********``, and the password of
    every URL, at any depth (the database's), as ``***``."""
    shown: dict[str, Any] = _masked(settings.model_dump(mode="json"))
    return shown


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    if isinstance(value, str) and "://" in value:
        with contextlib.suppress(ArgumentError, ValueError):  # not a URL: as it is
            return make_url(value).render_as_string(hide_password=True)
    return value


@router.get("/master/config")
async def get_master_config(request: Request) -> dict[str, Any]:
    """This master's settings (flags, ``PEDL_*`` variables, config file and defaults
    resolved), secrets masked. Administrators only (403)."""
    settings = request.app.state.settings
    assert isinstance(settings, MasterSettings)
    return shown_settings(settings)


LOG_LEVELS = ("TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""det's log levels (``TRACE`` is Python's ``DEBUG``)."""
MASTER_LOGGER = "pedl"
"""The logger whose level the master's log level is: every line the master writes itself."""


class MasterLogConfig(BaseModel):
    """The master's own log as ``PATCH /master/config`` changes it."""

    model_config = ConfigDict(extra="forbid")

    level: Literal["TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = Field(
        description="The least severe lines it writes (TRACE is DEBUG)."
    )


class MasterConfigPatch(BaseModel):
    """Body of ``PATCH /master/config``: what to change until the master restarts."""

    model_config = ConfigDict(extra="forbid")

    log: MasterLogConfig


def master_log_level() -> str:
    """The master's log level now (one of :data:`LOG_LEVELS`)."""
    return logging.getLevelName(logging.getLogger(MASTER_LOGGER).getEffectiveLevel())


class MasterLogPublic(BaseModel):
    """The master's own log now."""

    level: str = Field(description="The least severe lines it writes (Python's level name).")


@router.patch("/master/config")
async def patch_master_config(body: MasterConfigPatch) -> MasterLogPublic:
    """Change the level of the master's own log (``det master config set --log.level``) until
    it restarts; the answer is the level now. Administrators only (403)."""
    level = "DEBUG" if body.log.level == "TRACE" else body.log.level
    logging.getLogger(MASTER_LOGGER).setLevel(level)
    return MasterLogPublic(level=master_log_level())
