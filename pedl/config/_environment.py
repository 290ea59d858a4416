"""The ``environment`` section: environment variables of trial processes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, Discriminator, Field, Tag

from pedl.config._base import ConfigModel, config_error

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _check_entry(entry: str) -> str:
    name, sep, _ = entry.partition("=")
    if not sep:
        raise config_error(f"expected KEY=VALUE, got '{entry}'")
    if not _ENV_NAME.fullmatch(name):
        raise config_error(
            f"'{name}' is not a valid environment variable name "
            "(letters, digits and underscores, not starting with a digit)"
        )
    return entry


EnvironmentVariable = Annotated[str, AfterValidator(_check_entry)]
"""One ``KEY=VALUE`` entry; KEY is a valid shell variable name, VALUE may be empty."""


class EnvironmentVariablesMap(ConfigModel):
    """Determined's per-device form: ``{cpu: [...], gpu: [...]}`` (``cuda`` and ``rocm``
    are Determined's newer spellings of ``gpu`` and are added to it)."""

    cpu: list[EnvironmentVariable] = Field(default_factory=list)
    gpu: list[EnvironmentVariable] = Field(default_factory=list)
    cuda: list[EnvironmentVariable] = Field(default_factory=list)
    rocm: list[EnvironmentVariable] = Field(default_factory=list)


def _env_tag(value: Any) -> str | None:
    if isinstance(value, list | tuple):
        return "env:list"
    if isinstance(value, Mapping | EnvironmentVariablesMap):
        return "env:map"
    return "env:other"


EnvironmentVariables = Annotated[
    Annotated[list[EnvironmentVariable], Tag("env:list")]
    | Annotated[EnvironmentVariablesMap, Tag("env:map")],
    Discriminator(
        _env_tag,
        custom_error_type="pedl_config",
        custom_error_message=(
            "expected a list of KEY=VALUE strings, or a mapping {cpu: [...], gpu: [...]}"
        ),
    ),
]


class EnvironmentConfig(ConfigModel):
    """Where and with what environment trials run.

    PEDL uses ``environment_variables``; Determined's container settings (``image``,
    ``pod_spec``, ``ports``, ``registry_auth``, ...) are accepted and ignored.
    """

    ignored_fields: ClassVar[frozenset[str]] = frozenset(
        {
            "image",
            "force_pull_image",
            "pod_spec",
            "ports",
            "registry_auth",
            "add_capabilities",
            "drop_capabilities",
            "proxy_ports",
            "slurm",
            "pbs",
        }
    )

    environment_variables: EnvironmentVariables = Field(default_factory=list)
    image: str | dict[str, Any] | None = None
    force_pull_image: bool = False
    pod_spec: dict[str, Any] | None = None
    ports: dict[str, Any] = Field(default_factory=dict)
    registry_auth: dict[str, Any] | None = None
    add_capabilities: list[str] = Field(default_factory=list)
    drop_capabilities: list[str] = Field(default_factory=list)
    proxy_ports: list[Any] = Field(default_factory=list)
    slurm: Any = None
    pbs: Any = None

    def env_dict(self, gpu: bool) -> dict[str, str]:
        """The variables for a trial on GPU (``gpu=True``) or CPU slots, as a dict.

        A plain list applies to both; in the per-device form, ``gpu`` gets the entries of
        ``gpu``, ``cuda`` and ``rocm`` in that order. Later entries win on repeated keys.
        """
        variables = self.environment_variables
        if isinstance(variables, EnvironmentVariablesMap):
            entries = variables.gpu + variables.cuda + variables.rocm if gpu else variables.cpu
        else:
            entries = list(variables)
        out: dict[str, str] = {}
        for entry in entries:
            key, _, value = entry.partition("=")
            out[key] = value
        return out
