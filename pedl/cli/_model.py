"""``pedl model ...``: the model registry (Determined's ``det model``)."""

from __future__ import annotations

import click
from rich.table import Table

from pedl.cli import _det_tables as det_tables
from pedl.cli._aliases import AliasGroup
from pedl.cli._context import (
    console,
    csv_option,
    current_client,
    det_output,
    json_option,
    print_det_table,
    print_json,
)
from pedl.cli._display import print_metadata
from pedl.cli._tables import UUID_WIDTH, checkpoint_table
from pedl.client import Model, ModelSortBy, ModelVersion, OrderBy

MODEL_NAME = click.argument("name")


def _labels(values: tuple[str, ...]) -> list[str]:
    """``--labels a,b --labels c`` -> ``["a", "b", "c"]``."""
    return [label.strip() for value in values for label in value.split(",") if label.strip()]


def model_table(models: list[Model], title: str = "Models") -> Table:
    """The models, one row each (headers lowercase, as the experiment tables')."""
    table = Table(title=title)
    for column in ("id", "name", "versions", "labels", "owner", "updated", "description"):
        table.add_column(column, justify="right" if column in ("id", "versions") else "left")
    for m in models:
        table.add_row(
            str(m.model_id),
            m.name,
            str(m.num_versions),
            ", ".join(m.labels),
            m.username,
            m.last_updated_time.strftime("%Y-%m-%d %H:%M:%S"),
            m.description,
        )
    return table


def version_table(versions: list[ModelVersion]) -> Table:
    """A model's versions, one row each (headers lowercase, as the experiment tables')."""
    table = Table(title="Versions")
    table.add_column("version", justify="right")
    table.add_column("checkpoint", no_wrap=True, min_width=UUID_WIDTH)
    table.add_column("state")
    for column in ("experiment", "trial", "batches"):
        table.add_column(column, justify="right")
    table.add_column("by")
    table.add_column("registered")
    for v in versions:
        c = v.checkpoint
        table.add_row(
            str(v.model_version),
            c.uuid,
            c.state,
            str(c.experiment_id),
            str(c.trial_id),
            str(c.total_batches),
            v.username,
            v.creation_time.strftime("%Y-%m-%d %H:%M:%S"),
        )
    return table


@click.group("model", cls=AliasGroup, invoke_without_command=True)
@click.pass_context
def model(ctx: click.Context) -> None:
    """Name trained checkpoints in the model registry (alone: list the models)."""
    if ctx.invoked_subcommand is None:
        ctx.invoke(list_models)


@model.command("create")
@MODEL_NAME
@click.option("--description", "-d", default="", help="What the model is.")
@click.option(
    "--labels", "-l", multiple=True, help="Labels, comma-separated (or the option repeated)."
)
@json_option
def create(name: str, description: str, labels: tuple[str, ...], as_json: bool) -> None:
    """Create a model named NAME."""
    created = current_client().create_model(name, description, labels=_labels(labels))
    if as_json:
        print_json(created.to_json())
        return
    console().print(f"Created model {created.name!r} (id {created.model_id})")


@model.command("list")
@click.option(
    "--sort-by",
    type=click.Choice(["name", "description", "creation_time", "last_updated_time", "id"]),
    default="last_updated_time",
    show_default=True,
)
@click.option("--order-by", type=click.Choice(["asc", "desc"]), default="asc", show_default=True)
@json_option
@csv_option
def list_models(sort_by: str, order_by: str, as_json: bool, as_csv: bool) -> None:
    """List the models."""
    models = current_client().get_models(
        sort_by=ModelSortBy[sort_by.upper()],
        order_by=OrderBy.ASC if order_by == "asc" else OrderBy.DESC,
    )
    if as_json:
        print_json([m.to_json() for m in models])
        return
    if as_csv or det_output():
        print_det_table(det_tables.models(models), as_csv)
        return
    console().print(model_table(models))


@model.command("describe")
@MODEL_NAME
@click.option(
    "--version", "number", type=int, default=-1, show_default=True, help="-1: the latest."
)
@json_option
def describe(name: str, number: int, as_json: bool) -> None:
    """Show a model (by name or id) and one version (default: the latest)."""
    found = current_client().get_model(name)
    latest = found.get_version(number)
    if as_json:
        print_json({**found.to_json(), "latest_version": latest and latest.to_json()})
        return
    out = console()
    out.print(model_table([found], f"Model {found.name}"))
    if found.metadata:
        print_metadata(out, found.metadata)
    if latest is None:
        out.print(
            "No versions yet: pedl model register-version NAME CHECKPOINT_UUID"
            if number == -1
            else f"No version {number}"
        )
        return
    out.print(f"Version {latest.model_version}")
    out.print(checkpoint_table(latest.checkpoint))
    print_metadata(out, latest.checkpoint.metadata)


@model.command("list-versions")
@MODEL_NAME
@json_option
def list_versions(name: str, as_json: bool) -> None:
    """List a model's versions, newest first."""
    versions = current_client().get_model(name).get_versions()
    if as_json:
        print_json([v.to_json() for v in versions])
        return
    console().print(version_table(versions))


@model.command("register-version")
@MODEL_NAME
@click.argument("checkpoint_uuid")
@json_option
def register_version(name: str, checkpoint_uuid: str, as_json: bool) -> None:
    """Register checkpoint CHECKPOINT_UUID as the next version of model NAME; retention and
    experiment deletes keep it from then on."""
    version = current_client().get_model(name).register_version(checkpoint_uuid)
    if as_json:
        print_json(version.to_json())
        return
    console().print(
        f"Registered checkpoint {checkpoint_uuid} as version {version.model_version} of "
        f"model {version.model_name!r}"
    )


@model.command("delete")
@MODEL_NAME
def delete(name: str) -> None:
    """Delete a model and its versions (its creator or an administrator; as ``det model
    delete``, without asking); the checkpoints stay, no longer kept by the registry."""
    found = current_client().get_model(name)
    found.delete()
    console().print(f"Deleted model {found.name!r}")
