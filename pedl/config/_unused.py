"""Config fields PEDL accepts for compatibility with Determined but does not act on."""

from __future__ import annotations

from pedl.config._base import ConfigModel
from pedl.config._issues import PathElement, format_path

UNUSED_FIELDS_WARNING = (
    "these config fields are accepted for compatibility with Determined and ignored by PEDL"
)
"""The start of the one warning ``config_warnings`` gives; the fields follow after ': '."""


def unused_fields(config: ConfigModel) -> list[str]:
    """The dotted paths of the fields ``config`` sets that PEDL ignores, sorted.

    A field counts when it was given (not filled by default) with a value other than its
    default, so ``debug: false`` or a canonical ``as_dict()`` form of a clean config names
    nothing. The ignored fields of each section are its ``ignored_fields``; sections are
    searched recursively (``environment.image``, ``resources.resource_pool``, ...).
    """
    found: list[str] = []
    _collect(config, (), found)
    return sorted(found)


def _collect(model: ConfigModel, prefix: tuple[PathElement, ...], found: list[str]) -> None:
    cls = type(model)
    for name, field in cls.model_fields.items():
        if name not in model.model_fields_set:
            continue
        value = getattr(model, name)
        if name in cls.ignored_fields:
            if value != field.get_default(call_default_factory=True):
                found.append(format_path((*prefix, name)))
        elif isinstance(value, ConfigModel):
            _collect(value, (*prefix, name), found)


def config_warnings(config: ConfigModel) -> list[str]:
    """What to tell the user about a valid config: none, or one warning that lists every
    field from ``unused_fields`` ("these config fields are accepted for compatibility
    with Determined and ignored by PEDL: bind_mounts, environment.image, ...")."""
    fields = unused_fields(config)
    return [f"{UNUSED_FIELDS_WARNING}: {', '.join(fields)}"] if fields else []
