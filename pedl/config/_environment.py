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
        An ``image`` naming one of Determined's TensorFlow images (whose ``tf.keras`` was
        Keras 2) adds ``TF_USE_LEGACY_KERAS=1`` (Keras 2 mode, for scripts and Trial classes
        alike) unless the variables set it (``TF_USE_LEGACY_KERAS=0`` keeps Keras 3), and
        names the image in :data:`KERAS2_IMAGE_VARIABLE` for the trial's log.
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
        image = determined_tensorflow_image(self.image)
        if image is not None and "TF_USE_LEGACY_KERAS" not in out:
            # Determined's TensorFlow images had Keras 2 as tf.keras: so does the trial.
            out["TF_USE_LEGACY_KERAS"] = "1"
            out[KERAS2_IMAGE_VARIABLE] = image
        return out


KERAS2_IMAGE_VARIABLE = "PEDL_KERAS2_IMAGE"
"""Set for a trial put in Keras 2 mode by its ``environment.image`` (the image's name)."""


def determined_tensorflow_image(image: str | dict[str, Any] | None) -> str | None:
    """The first of ``image`` (a name, or Determined's ``{cpu: ..., gpu: ...}``) that is one of
    Determined's TensorFlow images (``determinedai/tensorflow-ngc...``,
    ``determinedai/environments:...-tf-2.x...``), or None."""
    names = [image] if isinstance(image, str) else list((image or {}).values())
    for name in names:
        if not isinstance(name, str) or not name.startswith("determinedai/"):
            continue
        tag = name.lower()
        if "tensorflow" in tag or "-tf-" in tag or "tf2" in tag:
            return name
    return None
