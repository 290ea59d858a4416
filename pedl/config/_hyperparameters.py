"""Hyperparameter definitions (Determined semantics) and the hyperparameter space type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BeforeValidator, Discriminator, Field, Tag, ValidationInfo, field_validator
from typing_extensions import TypeAliasType

from pedl.config._base import ConfigModel, config_error

HYPERPARAMETER_TYPES: tuple[str, ...] = ("const", "int", "double", "log", "categorical")


class ConstHyperparameter(ConfigModel):
    """``{type: const, val: X}``: the same value in every trial. A bare value means this."""

    type: Literal["const"]
    val: Any


def _check_order(maxval: float, info: ValidationInfo) -> None:
    minval = info.data.get("minval")
    if minval is not None and maxval < minval:
        raise config_error(f"maxval ({maxval}) must not be less than minval ({minval})")


class IntHyperparameter(ConfigModel):
    """``{type: int, minval, maxval, count?}``: an integer in ``[minval, maxval]``.

    ``count`` is the number of grid points (required by the grid searcher).
    """

    type: Literal["int"]
    minval: int
    maxval: int
    count: int | None = Field(default=None, ge=1)

    @field_validator("maxval")
    @classmethod
    def _maxval_not_below_minval(cls, maxval: int, info: ValidationInfo) -> int:
        _check_order(maxval, info)
        return maxval


class DoubleHyperparameter(ConfigModel):
    """``{type: double, minval, maxval, count?}``: a float drawn uniformly from the interval."""

    type: Literal["double"]
    minval: float
    maxval: float
    count: int | None = Field(default=None, ge=1)

    @field_validator("maxval")
    @classmethod
    def _maxval_not_below_minval(cls, maxval: float, info: ValidationInfo) -> float:
        _check_order(maxval, info)
        return maxval


class LogHyperparameter(ConfigModel):
    """``{type: log, minval, maxval, base=10, count?}``: ``base ** e``, ``e`` uniform in
    ``[minval, maxval]`` (the bounds are exponents)."""

    type: Literal["log"]
    minval: float
    maxval: float
    base: float = Field(default=10.0, gt=0)
    count: int | None = Field(default=None, ge=1)

    @field_validator("maxval")
    @classmethod
    def _maxval_not_below_minval(cls, maxval: float, info: ValidationInfo) -> float:
        _check_order(maxval, info)
        return maxval


class CategoricalHyperparameter(ConfigModel):
    """``{type: categorical, vals: [...]}``: one of a non-empty list of values."""

    type: Literal["categorical"]
    vals: list[Any] = Field(min_length=1)


def _bare_value_is_const(value: Any) -> Any:
    if isinstance(value, Mapping | ConfigModel):
        return value
    return {"type": "const", "val": value}


def _hp_tag(value: Any) -> str | None:
    if isinstance(value, ConfigModel):
        return f"hp:{getattr(value, 'type', None)}"
    if isinstance(value, Mapping):
        if "type" not in value:
            return "hp:group"
        if value["type"] is None:
            return None
        return f"hp:{value['type']}"
    return None


if TYPE_CHECKING:
    # mypy cannot follow the recursive runtime alias below; this is its static shape.
    Hyperparameter = (
        ConstHyperparameter
        | IntHyperparameter
        | DoubleHyperparameter
        | LogHyperparameter
        | CategoricalHyperparameter
        | dict[str, Any]
    )
else:
    Hyperparameter = TypeAliasType(
        "Hyperparameter",
        Annotated[
            Annotated[ConstHyperparameter, Tag("hp:const")]
            | Annotated[IntHyperparameter, Tag("hp:int")]
            | Annotated[DoubleHyperparameter, Tag("hp:double")]
            | Annotated[LogHyperparameter, Tag("hp:log")]
            | Annotated[CategoricalHyperparameter, Tag("hp:categorical")]
            | Annotated[dict[str, "Hyperparameter"], Tag("hp:group")],
            Discriminator(_hp_tag),
            BeforeValidator(_bare_value_is_const),
        ],
    )
"""One entry of a hyperparameter space: a typed hyperparameter, or a nested group
(a mapping without a ``type`` key) of further entries. Any bare value is a const."""

HyperparameterSpace = dict[str, Hyperparameter]
"""The ``hyperparameters`` section: names to hyperparameters or nested groups."""
