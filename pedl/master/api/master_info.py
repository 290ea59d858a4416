"""``/api/v1/master``: this master's version and the request limits a client checks before
sending (the SDK packs a model definition within them, so that a directory that is too large
is refused with advice before anything is uploaded)."""

from __future__ import annotations

from fastapi import APIRouter, Request

from pedl import __version__
from pedl.master._settings import MasterSettings
from pedl.master.api._auth import USER_AUTH_RESPONSES, require_user
from pedl.master.api._errors import ERROR_RESPONSES
from pedl.master.api._schemas import MasterPublic, ModelDefinitionLimits, RequestLimitsPublic

router = APIRouter(
    tags=["master"],
    responses={**ERROR_RESPONSES, **USER_AUTH_RESPONSES},
    dependencies=[require_user],
)


@router.get("/master")
async def get_master(request: Request) -> MasterPublic:
    """The master's version and limits (from its settings; answered on the event loop)."""
    settings = request.app.state.settings
    assert isinstance(settings, MasterSettings)
    return MasterPublic(
        version=__version__,
        limits=RequestLimitsPublic(
            model_definition=ModelDefinitionLimits(
                max_bytes=settings.max_model_definition_bytes,
                max_unpacked_bytes=settings.max_model_definition_unpacked_bytes,
                max_members=settings.max_model_definition_members,
            ),
            max_upload_bytes=settings.upload_bytes,
            max_request_bytes=settings.max_request_bytes,
        ),
    )
