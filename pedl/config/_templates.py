"""Config templates (``det template``): how a template merges under an experiment's config
(the master merges it when ``POST /experiments`` names one, so that its secrets, masked
wherever a template is shown, reach the experiment)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

_UNION_KEYS = frozenset({"checkpoint_storage", "searcher"})
"""Mappings whose ``type``/``name`` picks a kind: a template's of another kind is dropped."""

_LIST_UNION_KEYS = frozenset({"bind_mounts", "devices"})
"""Lists Determined combines (the config's items, then the template's it lacks)."""


def merge_template(config: Mapping[str, Any], template: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with ``template`` merged under it, as Determined merges them: mappings key
    by key, the config's value winning wherever both set one; a list is the config's (or the
    template's when the config has none), except ``bind_mounts`` and ``devices``, which
    combine; a ``checkpoint_storage`` or ``searcher`` of another ``type``/``name`` than the
    config's is not merged in. Neither argument is modified."""
    return _merge(config, template)


def _merge(config: Mapping[str, Any], template: Mapping[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(dict(config))
    for key, value in template.items():
        if key not in merged or merged[key] is None:
            merged[key] = copy.deepcopy(value)
            continue
        mine = merged[key]
        if isinstance(mine, Mapping) and isinstance(value, Mapping):
            if key in _UNION_KEYS and _kind(mine) is not None and _kind(mine) != _kind(value):
                continue
            merged[key] = _merge(mine, value)
        elif key in _LIST_UNION_KEYS and isinstance(mine, list) and isinstance(value, list):
            merged[key] = [*mine, *(copy.deepcopy(item) for item in value if item not in mine)]
    return merged


def _kind(mapping: Mapping[str, Any]) -> Any:
    return mapping.get("type", mapping.get("name"))
