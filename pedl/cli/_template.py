"""``pedl template ...`` (``det template``/``tpl``): config templates stored on the master."""

from __future__ import annotations

from pathlib import Path

import click
import yaml

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
from pedl.cli._presto import grid

NAME = click.argument("name")
CONFIG_FILE = click.argument(
    "config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)


@click.group("template", cls=AliasGroup)
def template() -> None:
    """Manage config templates (merged under an experiment's config with
    `pedl experiment create --template NAME`)."""


@template.command("list")
@click.option("-d", "--details", is_flag=True, help="Also print each template's config.")
@json_option
@csv_option
def list_templates(details: bool, as_json: bool, as_csv: bool) -> None:
    """List the templates on the master."""
    templates = current_client().list_templates()
    if as_json:
        print_json(templates)
        return
    if as_csv or det_output():
        table = det_tables.templates(templates, details=details)
        if details and not as_csv:  # det's render_objects(TemplateAll, ..., table_fmt="grid")
            click.echo(grid(*table))
        else:
            print_det_table(table, as_csv)
        return
    for name, config in templates.items():
        click.echo(name)
        if details:
            click.echo(
                "  " + yaml.safe_dump(config, sort_keys=False).replace("\n", "\n  ").rstrip()
            )


@template.command("describe")
@NAME
def describe(name: str) -> None:
    """Print a template's config as YAML."""
    click.echo(yaml.safe_dump(current_client().get_template(name), sort_keys=False), nl=False)


def _set(name: str, config_file: Path, verb: str) -> None:
    current_client().set_template(name, config_file)
    console().print(f"{verb} template {name}", markup=False)


@template.command("create")
@NAME
@CONFIG_FILE
def create(name: str, config_file: Path) -> None:
    """Create the template NAME from CONFIG_FILE (YAML); refused if it exists."""
    client = current_client()
    if name in client.list_templates():
        raise click.ClickException(f"template {name} exists; replace it with `template set`")
    _set(name, config_file, "Created")


@template.command("set")
@NAME
@CONFIG_FILE
def set_template(name: str, config_file: Path) -> None:
    """Create or replace the template NAME with CONFIG_FILE (YAML)."""
    _set(name, config_file, "Set")


@template.command("remove")
@NAME
def remove(name: str) -> None:
    """Remove the template NAME."""
    current_client().remove_template(name)
    console().print(f"Removed template {name}", markup=False)


@template.group("set-value", cls=AliasGroup)
def set_value() -> None:
    """Change a template's attributes."""


@set_value.command("config")
@NAME
@CONFIG_FILE
def set_value_config(name: str, config_file: Path) -> None:
    """Replace the config of the template NAME with CONFIG_FILE (as `template set`)."""
    _set(name, config_file, "Set")
