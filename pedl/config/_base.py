"""The base of every config model, and helpers shared by the models' validators."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError, PydanticUndefined

KNOWN_FIELDS_CONTEXT_KEY = "pedl.known_fields"
"""Validation-context key: a dict ``id(input mapping) -> field names valid there``.

When a config is validated with this key in the context, every model records the field
names it accepts for the mapping it was given, so that an "unknown field" error can
suggest the closest valid name.
"""

CUSTOM_ERROR_TYPE = "pedl_config"
"""The pydantic error type of messages written by this package (used verbatim)."""


def config_error(message: str, at: str | None = None) -> PydanticCustomError:
    """An error, raised from a validator, whose message is shown to the user as written.

    ``at`` names a field below the validated object that the problem is about (for
    model-level checks), so the reported path points at it.
    """
    # pydantic substitutes only ``{name}`` for names in the context, so braces need no escaping.
    return PydanticCustomError(CUSTOM_ERROR_TYPE, message, {"at": at or ""})


class ConfigModel(BaseModel):
    """Base of config sections: strict types, unknown keys rejected, immutable.

    ``null`` for a field that has a non-null default means "use the default", as in
    Determined. Determined keys that PEDL ignores are real fields, named in
    ``ignored_fields``; there is no silent acceptance of unknown keys.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    ignored_fields: ClassVar[frozenset[str]] = frozenset()
    """Fields accepted so that Determined configs load, which PEDL does not act on; a config
    that sets one to a non-default value gets a warning (see ``unused_fields``)."""

    @model_validator(mode="before")
    @classmethod
    def _drop_nulls_and_record_fields(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, Mapping):
            return data
        context = info.context
        if isinstance(context, dict) and KNOWN_FIELDS_CONTEXT_KEY in context:
            context[KNOWN_FIELDS_CONTEXT_KEY][id(data)] = list(cls.model_fields)
        cleaned = dict(data)
        for key, value in data.items():
            field = cls.model_fields.get(key) if isinstance(key, str) else None
            if value is None and field is not None and _has_non_null_default(field):
                del cleaned[key]
        return cleaned


def _has_non_null_default(field: Any) -> bool:
    if field.default_factory is not None:
        return True
    return field.default is not PydanticUndefined and field.default is not None


def tag_of(prefix: str, key: str) -> Callable[[Any], str | None]:
    """A discriminator function for a union whose members are tagged ``"<prefix>:<value>"``.

    It reads ``key`` from a mapping (or the attribute of an already-built model); a missing
    or null value yields ``None`` so pydantic reports a missing discriminator, any other
    value that names no member yields an invalid tag.
    """

    def discriminate(value: Any) -> str | None:
        if isinstance(value, Mapping):
            if key not in value or value[key] is None:
                return None
            return f"{prefix}:{value[key]}"
        tag = getattr(value, key, None)
        return f"{prefix}:{tag}" if isinstance(tag, str) else None

    discriminate.__name__ = discriminate.__qualname__ = f"{prefix}_tag"
    return discriminate
