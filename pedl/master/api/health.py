"""``/api/v1/health``: liveness."""

from __future__ import annotations

from fastapi import APIRouter

from pedl.master.api._schemas import Health

router = APIRouter(tags=["health"])


@router.get("/health")
async def health() -> Health:
    """``{"status": "ok"}`` while the master serves requests (answered on the event loop:
    needs no worker thread or connection, and is never shed)."""
    return Health(status="ok")
