"""Training lengths in batches, records or epochs."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, model_serializer, model_validator

from pedl.config._base import ConfigModel, config_error
from pedl.config._issues import describe_value
from pedl.config._limits import MAX_LENGTH

LengthUnit = Literal["batches", "records", "epochs"]
LENGTH_UNITS: tuple[str, ...] = ("batches", "records", "epochs")


class Length(ConfigModel):
    """A training length: a non-negative number of batches, records or epochs.

    YAML form is a one-key mapping: ``{batches: 100}``, ``{records: 6400}`` or
    ``{epochs: 2}``; ``as_dict``/serialisation gives the same form back. The model's own
    ``{unit: ..., value: ...}`` form is accepted too.
    """

    unit: LengthUnit
    value: int = Field(ge=0, le=MAX_LENGTH)

    @model_validator(mode="before")
    @classmethod
    def _from_yaml_form(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise config_error(
                f"expected a length like {{batches: 100}}, {{records: 6400}} or {{epochs: 2}}, "
                f"got {describe_value(data)}"
            )
        if "unit" in data or "value" in data:
            return data
        units = [key for key in data if key in LENGTH_UNITS]
        others = [str(key) for key in data if key not in LENGTH_UNITS]
        if others:
            raise config_error(
                f"unknown length unit '{others[0]}'; expected exactly one of batches, records, "
                "epochs, e.g. {batches: 100}"
            )
        if len(units) != 1:
            raise config_error(
                "expected exactly one of batches, records, epochs, e.g. {batches: 100}"
                + (f"; got {', '.join(units)}" if units else "")
            )
        unit = units[0]
        return {"unit": unit, "value": data[unit]}

    @model_serializer
    def _to_yaml_form(self) -> dict[str, int]:
        return {self.unit: self.value}

    @classmethod
    def batches(cls, value: int) -> Length:
        """A length of ``value`` batches."""
        return cls(unit="batches", value=value)

    def to_batches(self, global_batch_size: int, records_per_epoch: int) -> int:
        """This length in batches of ``global_batch_size`` records.

        Records round up (``ceil(records / global_batch_size)``); epochs are
        ``ceil(epochs * records_per_epoch / global_batch_size)``. Raises ValueError for a
        non-positive batch size, or for epochs when ``records_per_epoch`` is not positive.
        """
        if self.unit == "batches":
            return self.value
        if global_batch_size <= 0:
            raise ValueError(f"global_batch_size must be positive, got {global_batch_size}")
        if self.unit == "records":
            return math.ceil(self.value / global_batch_size)
        if records_per_epoch <= 0:
            raise ValueError(
                f"cannot convert {self.value} epochs to batches: records_per_epoch is "
                f"{records_per_epoch}; set records_per_epoch in the experiment config"
            )
        return math.ceil(self.value * records_per_epoch / global_batch_size)

    def __str__(self) -> str:
        return f"{self.value} {self.unit}"
