"""MkDocs hook: the references that are generated from the code at build time.

A page asks for a generated section with a marker line, replaced here before Markdown is
rendered:

- ``<!-- pedl:config-fields -->``: every experiment-config field, from the pydantic models of
  :mod:`pedl.config` (type and default from the model; meaning from
  ``docs/reference/config-fields.yml``, since the models carry no field descriptions);
- ``<!-- pedl:master-settings -->``: every master setting, from
  :class:`pedl.master.MasterSettings` (its fields' descriptions);
- ``<!-- pedl:cli -->``: every ``pedl`` command that is not hidden, with exactly what its
  ``--help`` prints (its arguments and options);
- ``<!-- pedl:rest-api -->``: every path and method of the master's OpenAPI schema, built from
  the FastAPI app (``create_app(...).openapi()``) without starting a server.

What cannot be documented (a config field without a meaning in the YAML file, a description
there for a field that no longer exists) is logged as a warning, which fails
``mkdocs build --strict``.
"""

from __future__ import annotations

import html
import logging
import re
import tempfile
import types
import typing
from pathlib import Path
from typing import Any

import click
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

import pedl.config as config
from pedl.config._legacy import REMOVED_SEARCHERS

log = logging.getLogger("mkdocs.plugins.pedl_reference")

DOCS = Path(__file__).resolve().parent.parent
CONFIG_FIELDS_FILE = DOCS / "reference" / "config-fields.yml"


# --- types and defaults -------------------------------------------------------------------


def type_name(annotation: Any) -> str:
    """A short, readable form of a field's annotation (``int | None``, ``list[str]``)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        names: list[str] = []
        for arg in args:
            name = type_name(arg)
            if name not in names:
                names.append(name)
        return " | ".join(names)
    if origin is typing.Literal:
        return " | ".join(repr(arg).replace("'", '"') for arg in args)
    if origin is not None:
        inner = ", ".join(type_name(arg) for arg in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]"
    if annotation is type(None):
        return "None"
    if annotation is Any:
        return "any"
    if isinstance(annotation, type):
        if issubclass(annotation, config.Length):
            return "length"
        if issubclass(annotation, BaseModel):
            return "mapping"
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def default_text(field: FieldInfo) -> str:
    """The default as it reads in YAML; "required" for a required field."""
    if field.is_required():
        return "required"
    factory = field.default_factory
    value = factory() if factory is not None else field.default  # type: ignore[call-arg]
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, config.Length):
        return "never" if value.value == 0 else f"{{{value.unit}: {value.value}}}"
    if isinstance(value, BaseModel):
        return "see below"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | dict) and not value:
        return "[]" if isinstance(value, list) else "{}"
    return str(value)


def cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def code(text: str) -> str:
    """Inline code safe inside a Markdown table cell (a ``|`` inside backticks too)."""
    return "<code>" + html.escape(text).replace("|", "&#124;") + "</code>"


# --- experiment-config fields -------------------------------------------------------------


def _config_sections() -> list[tuple[str, str, type[BaseModel], str]]:
    """(title, dotted prefix, model, note) for every section of the experiment config."""
    searchers: list[tuple[str, type[BaseModel]]] = [
        ("single", config.SingleSearcherConfig),
        ("grid", config.GridSearcherConfig),
        ("random", config.RandomSearcherConfig),
        ("adaptive_asha", config.AdaptiveASHASearcherConfig),
        ("async_halving", config.AsyncHalvingSearcherConfig),
        ("tpe", config.TPESearcherConfig),
        ("gp", config.GPSearcherConfig),
        ("pbt", config.PBTSearcherConfig),
        ("custom", config.CustomSearcherConfig),
    ]
    storages: list[tuple[str, type[BaseModel]]] = [
        ("shared_fs", config.SharedFSStorageConfig),
        ("directory", config.DirectoryStorageConfig),
        ("s3", config.S3StorageConfig),
        ("gcs", config.GCSStorageConfig),
        ("azure", config.AzureStorageConfig),
    ]
    hparams: list[tuple[str, type[BaseModel]]] = [
        ("const", config.ConstHyperparameter),
        ("int", config.IntHyperparameter),
        ("double", config.DoubleHyperparameter),
        ("log", config.LogHyperparameter),
        ("categorical", config.CategoricalHyperparameter),
    ]
    sections: list[tuple[str, str, type[BaseModel], str]] = [
        ("Top level", "", config.ExperimentConfig, "")
    ]
    sections += [
        (f"searcher: {name}", "searcher", model, f"`searcher.name: {name}`")
        for name, model in searchers
    ]
    sections += [
        (f"checkpoint_storage: {name}", "checkpoint_storage", model, f"`type: {name}`")
        for name, model in storages
    ]
    sections += [
        ("resources", "resources", config.ResourcesConfig, ""),
        ("environment", "environment", config.EnvironmentConfig, ""),
        (
            "environment.environment_variables (per device)",
            "environment.environment_variables",
            config.EnvironmentVariablesMap,
            "",
        ),
        ("reproducibility", "reproducibility", config.ReproducibilityConfig, ""),
    ]
    sections += [
        (f"hyperparameters: {name}", "hyperparameters.NAME", model, f"`type: {name}`")
        for name, model in hparams
    ]
    return sections


def _first_paragraph(doc: str | None) -> str:
    text = (doc or "").strip().split("\n\n")[0]
    return " ".join(line.strip() for line in text.splitlines())


def _rst_to_md(text: str) -> str:
    """Docstrings use reST's ``code`` and :role:`name`; Markdown wants `code`."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"`\1`", text)
    return text.replace("``", "`")


def render_config_fields() -> str:
    """The config reference: one table per section."""
    meanings: dict[str, str] = yaml.safe_load(CONFIG_FIELDS_FILE.read_text(encoding="utf-8"))
    used: set[str] = set()
    out: list[str] = []
    for title, prefix, model, note in _config_sections():
        ignored: frozenset[str] = getattr(model, "ignored_fields", frozenset())
        out.append(f"### {title}\n")
        intro = _rst_to_md(_first_paragraph(model.__doc__))
        if note:
            intro = f"{note}. {intro}"
        out.append(intro + "\n")
        out.append("| field | type | default | meaning |")
        out.append("| --- | --- | --- | --- |")
        for name, field in model.model_fields.items():
            if field.exclude:
                continue
            path = f"{prefix}.{name}" if prefix else name
            if name in ignored:
                meaning = "Determined's field: accepted so that its configs load, not acted upon "
                meaning += "(a warning names it)."
                extra = meanings.get(f"{path}@ignored")
                if extra:
                    used.add(f"{path}@ignored")
                    meaning = f"{extra} {meaning}"
            elif path in meanings:
                used.add(path)
                meaning = meanings[path]
            else:
                log.warning("config field %s has no meaning in %s", path, CONFIG_FIELDS_FILE)
                meaning = ""
            default = default_text(field)
            default_key = f"{path}@default"
            if default_key in meanings:
                used.add(default_key)
                default = meanings[default_key]
            out.append(
                f"| {code(path)} | {code(type_name(field.annotation))} | {cell(default)} "
                f"| {cell(meaning)} |"
            )
        out.append("")
    for stale in sorted(set(meanings) - used):
        log.warning("%s describes %s, which no config model has", CONFIG_FIELDS_FILE, stale)
    out.append("### Refused searchers\n")
    out.append("Determined's searchers that PEDL does not run; a config naming one is refused:\n")
    for name, message in sorted(REMOVED_SEARCHERS.items()):
        out.append(f"- `{name}`: {message}.")
    out.append("")
    return "\n".join(out)


# --- master settings ----------------------------------------------------------------------


def render_master_settings() -> str:
    from pedl.master import MasterSettings

    rm_settings = MasterSettings.model_fields["resource_manager"].annotation
    assert isinstance(rm_settings, type) and issubclass(rm_settings, BaseModel)

    out = ["| setting | environment variable | type | default | meaning |"]
    out.append("| --- | --- | --- | --- | --- |")
    defaults = {
        "db_url": "sqlite:///HOME/pedl.db",
        "cpu_slots": "half the CPU cores, at least 1",
        "read_processes": "1 (0 on a one-core machine)",
        "resource_manager": "`{type: local}`",
    }
    for name, field in MasterSettings.model_fields.items():
        if not field.description:
            log.warning("master setting %s has no description", name)
        default = defaults.get(name) or default_text(field)
        out.append(
            f"| {code(name)} | {code('PEDL_' + name.upper())} | {code(type_name(field.annotation))}"
            f" | {cell(html.escape(default))} | {cell(html.escape(field.description or ''))} |"
        )
    out.append("")
    out.append("### resource_manager\n")
    out.append(_rst_to_md(_first_paragraph(rm_settings.__doc__)) + "\n")
    out.append("| setting | type | default | meaning |")
    out.append("| --- | --- | --- | --- |")
    for name, field in rm_settings.model_fields.items():
        if not field.description:
            log.warning("master setting resource_manager.%s has no description", name)
        out.append(
            f"| {code('resource_manager.' + name)} | {code(type_name(field.annotation))} "
            f"| {cell(html.escape(default_text(field)))} "
            f"| {cell(html.escape(field.description or ''))} |"
        )
    out.append("")
    return "\n".join(out)


# --- REST API -----------------------------------------------------------------------------


def openapi_schema() -> dict[str, Any]:
    """The master's OpenAPI schema, from an app built on a throwaway home (no server)."""
    from pedl.master import MasterSettings, create_app

    with tempfile.TemporaryDirectory(prefix="pedl-docs-") as home:
        settings = MasterSettings(home=Path(home), db_url=f"sqlite:///{home}/pedl.db")
        app = create_app(settings)
        schema: dict[str, Any] = app.openapi()
        app.state.database.dispose()
    return schema


def _schema_name(schema: dict[str, Any] | None) -> str:
    if not schema:
        return ""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    if schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        return f"list of {_schema_name(schema['items']) or 'values'}"
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(_schema_name(s) or str(s.get("type", "")) for s in schema[key])
    return str(schema.get("type", ""))


def render_rest_api(schema: dict[str, Any]) -> str:
    out: list[str] = []
    info = schema.get("info", {})
    out.append(f"{info.get('description', '')} OpenAPI {schema.get('openapi', '')}.\n")
    groups: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for path, item in schema["paths"].items():
        for method, op in item.items():
            if method.lower() not in {"get", "put", "post", "patch", "delete"}:
                continue
            tag = (op.get("tags") or ["other"])[0]
            groups.setdefault(tag, []).append((path, method.upper(), op))
    for tag in sorted(groups):
        out.append(f"## {tag}\n")
        for path, method, op in groups[tag]:
            out.append(f"### `{method} {path}`\n")
            summary = op.get("summary") or ""
            description = (op.get("description") or "").strip()
            if summary:
                out.append(f"**{summary}**\n")
            if description:
                out.append(description + "\n")
            params = op.get("parameters") or []
            if params:
                out.append("| parameter | in | type | required | meaning |")
                out.append("| --- | --- | --- | --- | --- |")
                for param in params:
                    out.append(
                        f"| `{param['name']}` | {param.get('in', '')} "
                        f"| {cell(_schema_name(param.get('schema')))} "
                        f"| {'yes' if param.get('required') else 'no'} "
                        f"| {cell((param.get('description') or '').strip())} |"
                    )
                out.append("")
            body = op.get("requestBody")
            if body:
                kinds = ", ".join(
                    f"`{ctype}` ({_schema_name(media.get('schema')) or 'any'})"
                    for ctype, media in body.get("content", {}).items()
                )
                out.append(f"Body: {kinds}.\n")
            responses = op.get("responses") or {}
            if responses:
                answers = "; ".join(
                    f"{status} {cell(resp.get('description', ''))}"
                    + (
                        f" ({_schema_name(resp['content']['application/json'].get('schema'))})"
                        if "application/json" in resp.get("content", {})
                        and _schema_name(resp["content"]["application/json"].get("schema"))
                        else ""
                    )
                    for status, resp in responses.items()
                )
                out.append(f"Answers: {answers}.\n")
    return "\n".join(out)


# --- the command line --------------------------------------------------------------------


def cli_commands() -> list[tuple[str, click.Context]]:
    """(``pedl experiment create``, its click context) for every command that is not hidden,
    groups first; the groups load their commands lazily, so they are asked by name."""
    from pedl.cli import cli
    from pedl.cli._main import MASTER_VIEWS, load_command

    found: list[tuple[str, click.Context]] = []

    def walk(command: click.Command, ctx: click.Context) -> None:
        found.append((ctx.command_path, ctx))
        group = command
        if ctx.command_path == "pedl master":  # `pedl master info`: det's views of a master
            group = load_command(*MASTER_VIEWS)
        if isinstance(group, click.Group):
            seen: set[int] = set()
            for name in group.list_commands(ctx):
                sub = group.get_command(ctx, name)
                if sub is None or sub.hidden or id(sub) in seen or name != sub.name:
                    continue
                seen.add(id(sub))
                walk(sub, click.Context(sub, info_name=name, parent=ctx))

    # One width wherever the site is built (click would follow the terminal's).
    walk(cli, click.Context(cli, info_name="pedl", terminal_width=96, max_content_width=96))
    return found


def render_cli() -> str:
    """Each command's heading and exactly what its ``--help`` prints."""
    out: list[str] = []
    for path, ctx in cli_commands():
        level = "#" * min(2 + path.count(" "), 4)
        short = ctx.command.get_short_help_str(limit=200)
        out.append(f"{level} {path}\n")
        if short:
            out.append(f"{short}\n")
        out.append("```text")
        out.append(ctx.command.get_help(ctx).replace("```", "'''"))
        out.append("```\n")
    return "\n".join(out)


def render_det() -> str:
    """``det``'s own help, its abbreviations and the groups it answers with a pointer."""
    from pedl.cli._aliases import ALIASES
    from pedl.cli._det import UNSUPPORTED, UNSUPPORTED_ALIASES, det

    ctx = click.Context(det, info_name="det", terminal_width=96, max_content_width=96)
    out = ["```text", det.get_help(ctx).replace("```", "'''"), "```\n"]
    out.append("| `det` spelling | the command it names |")
    out.append("|---|---|")
    for alias, name in sorted(ALIASES.items()):
        out.append(f"| {code(alias)} | {code(name)} |")
    for alias, name in sorted(UNSUPPORTED_ALIASES.items()):
        out.append(f"| {code(alias)} | {code(name)} |")
    out.append("\nDetermined's groups that PEDL lacks end with one line (exit status 1):\n")
    out.append("| `det` group | what it prints |")
    out.append("|---|---|")
    for name, message in sorted(UNSUPPORTED.items()):
        out.append(f"| {code(name)} | {cell(message)} |")
    return "\n".join(out) + "\n"


# --- the hook -----------------------------------------------------------------------------

_CACHE: dict[str, str] = {}


def _generated(kind: str) -> str:
    if kind not in _CACHE:
        if kind == "config-fields":
            _CACHE[kind] = render_config_fields()
        elif kind == "master-settings":
            _CACHE[kind] = render_master_settings()
        elif kind == "cli":
            _CACHE[kind] = render_cli()
        elif kind == "det":
            _CACHE[kind] = render_det()
        elif kind == "rest-api":
            _CACHE[kind] = render_rest_api(openapi_schema())
        else:
            log.warning("unknown generated section %r", kind)
            _CACHE[kind] = ""
    return _CACHE[kind]


def on_page_markdown(markdown: str, **_: Any) -> str:
    """Replace each ``<!-- pedl:KIND -->`` line with the generated section."""
    lines = []
    for line in markdown.splitlines():
        stripped = line.strip()
        if stripped.startswith("<!-- pedl:") and stripped.endswith("-->"):
            kind = stripped.removeprefix("<!-- pedl:").removesuffix("-->").strip()
            lines.append(_generated(kind))
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


_SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj|const):(?=<code>)")
_TILDE = re.compile(r"<code>~\.?")


def on_page_content(html: str, **_: Any) -> str:
    """The docstrings use Sphinx roles (``:class:`Session```), which Markdown renders as the
    role's name before the code: the API pages show the code alone."""
    return _TILDE.sub("<code>", _SPHINX_ROLE.sub("", html))
