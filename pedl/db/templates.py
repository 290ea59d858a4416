"""Queries on config templates (``det template``): named mappings stored on the master."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from pedl.db._det_models import Template
from pedl.db._errors import NotFoundError
from pedl.db._types import utcnow


def list_templates(session: Session) -> list[Template]:
    """Every template, by name."""
    return list(session.scalars(select(Template).order_by(Template.name)))


def get_template(session: Session, name: str) -> Template:
    """The template ``name``; raises :class:`NotFoundError`."""
    template = session.get(Template, name)
    if template is None:
        raise NotFoundError("template", name)
    return template


def put_template(session: Session, name: str, config: dict[str, Any], owner: str) -> Template:
    """Create the template ``name`` or replace its config (its owner stays the creator)."""
    template = session.get(Template, name, with_for_update=True)
    if template is None:
        template = Template(name=name, config=config, owner=owner)
        session.add(template)
    else:
        template.config = config
        template.updated_at = utcnow()
    session.flush()
    return template


def delete_template(session: Session, name: str) -> None:
    """Remove the template ``name``; raises :class:`NotFoundError`."""
    session.delete(get_template(session, name))
    session.flush()
