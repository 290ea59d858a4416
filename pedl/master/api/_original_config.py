"""An experiment's config as its submitter wrote it (``experiments.config_text``), as the API
shows it: with the same secrets masked as in its effective config
(:func:`pedl.config.mask_config`)."""

from __future__ import annotations

from collections.abc import Mapping

import yaml

from pedl.config import mask_config


def shown_original_config(text: str) -> str:
    """``text`` unchanged (comments and layout kept) when it holds no secret; else the config
    it holds, its secrets masked, as YAML (the text itself is not shown: a secret may be
    anywhere in it). A text that does not parse to a mapping (it was validated as one) is
    not shown at all."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        return "# (the submitted config cannot be shown)\n"
    if not isinstance(document, Mapping):
        return "# (the submitted config cannot be shown)\n"
    masked = mask_config(document)
    if masked == document:
        return text
    note = "# As submitted, its secrets masked (so reformatted, without its comments).\n"
    return note + yaml.safe_dump(masked, sort_keys=False, allow_unicode=True)
