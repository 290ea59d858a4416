"""Config templates (``det template``): the merge lives beside the config
(:mod:`pedl.config._templates`), where the master, which merges a template under an
experiment's config, finds it too."""

from __future__ import annotations

from pedl.config._templates import merge_template

__all__ = ["merge_template"]
