"""``determined.errors``: the exceptions model definitions raise or catch."""

from __future__ import annotations

from pedl import InvalidHP


class InvalidExperimentException(ValueError):
    """The model definition or the experiment cannot run as written."""


class InvalidDataTypeException(TypeError):
    """A data loader returned data of an unsupported type."""

    def __init__(self, data_type: type, message: str) -> None:
        super().__init__(f"{data_type}: {message}")


class InvalidConfigurationException(ValueError):
    """The experiment configuration is not valid for this model definition."""


__all__ = [
    "InvalidConfigurationException",
    "InvalidDataTypeException",
    "InvalidExperimentException",
    "InvalidHP",
]
