"""The documentation site: built strictly, complete, and its examples load.

The site (``mkdocs.yml``, ``docs/``) is built with ``mkdocs build --strict`` once per session
into a temporary directory, or read from ``PEDL_DOCS_SITE`` (``make test`` builds it first with
``make docs`` and points this at ``site/``). Then:

- the references hold every ``pedl`` command, every experiment-config field, every master
  setting and every REST path, each found independently of the generator that wrote them (the
  click tree, the pydantic models walked through their unions, the settings model, the OpenAPI
  schema of a freshly built app), and the Python API pages hold every public name of
  ``pedl.keras``, ``pedl.core`` and ``pedl.client`` with its docstring (read from the sources,
  without importing TensorFlow);
- every ```yaml block of the guides that is an experiment config (or a part of one) loads with
  ``pedl.config.parse_config``, every master-config block with ``MasterSettings``; every
  ```python block compiles and its ``pedl``/``determined`` imports exist; the blocks after a
  ``<!-- test: run -->`` line run, and those after ``<!-- file: PATH -->`` equal that file;
- the site's strict settings fail a build on a broken link.
"""

from __future__ import annotations

import ast
import html
import os
import re
import subprocess
import sys
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import griffe
import pytest
import yaml
from pydantic import BaseModel

from pedl.cli import cli
from pedl.cli._main import MASTER_VIEWS, load_command
from pedl.config import ExperimentConfig, Length, parse_config
from pedl.master import MasterSettings, create_app
from tests.waits import scaled

ROOT = Path(__file__).parents[2]
DOCS = ROOT / "docs"
MKDOCS = Path(sys.executable).parent / "mkdocs"

MINIMAL_CONFIG: dict[str, Any] = {
    "searcher": {"name": "single", "metric": "val_accuracy", "max_length": {"batches": 1}}
}
"""What a part of a config in a guide (a ``checkpoint_storage`` block, say) is merged over."""


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built site: ``PEDL_DOCS_SITE`` when set, else a strict build of this checkout."""
    given = os.environ.get("PEDL_DOCS_SITE")
    if given:
        path = Path(given)
        if not path.is_absolute():
            path = ROOT / path
        assert (path / "index.html").is_file(), f"PEDL_DOCS_SITE={given}: no built site there"
        return path
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(300),
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-6000:]}"
    return out


def page_text(site: Path, page: str) -> str:
    """A built page's HTML with tags removed and entities decoded."""
    raw = (site / page / "index.html").read_text(encoding="utf-8")
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


# --- the references hold everything -------------------------------------------------------


def commands(command: click.Command, ctx: click.Context) -> Iterator[str]:
    """Every command that is not hidden, asked by name (the groups load them lazily); under
    ``pedl master`` its views (``pedl master info``)."""
    yield ctx.command_path
    group = load_command(*MASTER_VIEWS) if ctx.command_path == "pedl master" else command
    if isinstance(group, click.Group):
        for name in group.list_commands(ctx):
            sub = group.get_command(ctx, name)
            if sub is not None and not sub.hidden and sub.name == name:  # not an alias
                yield from commands(sub, click.Context(sub, info_name=name, parent=ctx))


def test_every_command_is_in_the_cli_reference(site: Path) -> None:
    text = page_text(site, "reference/cli")
    names = set(commands(cli, click.Context(cli, info_name="pedl")))
    assert {"pedl experiment create", "pedl master info", "pedl user login"} <= names
    missing = sorted(name for name in names if name not in text)
    assert not missing, f"commands missing from the CLI reference: {missing}"
    raw = (site / "reference/cli/index.html").read_text(encoding="utf-8")
    assert "--local" in raw and "--follow" in raw  # options are listed, not only names


def test_dets_abbreviations_and_missing_groups_are_in_the_cli_reference(site: Path) -> None:
    from pedl.cli._aliases import ALIASES
    from pedl.cli._det import UNSUPPORTED

    text = page_text(site, "reference/cli")
    assert "Usage: det [OPTIONS] COMMAND" in text  # det's own help, its global options
    for option in ("-m, --master", "-u, --user", "-v, --version"):
        assert option in text, option
    rows = {(m[0], m[1]) for m in re.findall(r"^\s*(\S+)\s*\n\s*(\S+)\s*$", text, re.M)}
    missing = sorted(f"{a} -> {n}" for a, n in ALIASES.items() if (a, n) not in rows)
    assert not missing, f"det abbreviations missing from the CLI reference: {missing}"
    for name, message in UNSUPPORTED.items():
        assert message.replace("`", "") in text, f"det {name}: its answer is not in the reference"


def config_paths(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every field path of ``model``, through unions (searchers, storages) and mappings."""
    for name, field in model.model_fields.items():
        if field.exclude:
            continue
        path = f"{prefix}.{name}" if prefix else name
        yield path
        for sub, sub_prefix in models_in(field.annotation, path):
            if sub is not Length:
                yield from config_paths(sub, sub_prefix)


def models_in(annotation: Any, path: str) -> Iterator[tuple[type[BaseModel], str]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, path
        return
    if hasattr(annotation, "__value__"):  # a type alias (Hyperparameter)
        yield from models_in(annotation.__value__, path)
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is dict and len(args) == 2:
        yield from models_in(args[1], f"{path}.NAME")
        return
    if origin is typing.Annotated:
        yield from models_in(args[0], path)
        return
    for arg in args:
        if origin is list:
            continue  # lists of strings or values: no fields of their own
        yield from models_in(arg, path)


def test_every_config_field_is_in_the_config_reference(site: Path) -> None:
    text = page_text(site, "reference/config")
    paths = sorted(set(config_paths(ExperimentConfig)))
    assert "searcher.max_trials" in paths and "checkpoint_storage.bucket" in paths
    assert "hyperparameters.NAME.minval" in paths
    missing = [path for path in paths if path not in text]
    assert not missing, f"config fields missing from the config reference: {missing}"


def test_every_master_setting_is_in_the_settings_reference(site: Path) -> None:
    rm_settings = MasterSettings.model_fields["resource_manager"].annotation
    assert isinstance(rm_settings, type) and issubclass(rm_settings, BaseModel)

    text = page_text(site, "reference/master-settings")
    names = list(MasterSettings.model_fields)
    names += [f"resource_manager.{name}" for name in rm_settings.model_fields]
    missing = [name for name in names if name not in text]
    missing += [
        f"PEDL_{name.upper()}"
        for name in MasterSettings.model_fields
        if f"PEDL_{name.upper()}" not in text
    ]
    assert not missing, f"master settings missing from the settings reference: {missing}"


def test_every_rest_path_is_in_the_rest_reference(site: Path, tmp_path: Path) -> None:
    app = create_app(MasterSettings(home=tmp_path, db_url=f"sqlite:///{tmp_path}/pedl.db"))
    try:
        schema = app.openapi()
    finally:
        app.state.database.dispose()
    text = page_text(site, "reference/rest-api")
    operations = [
        f"{method.upper()} {path}"
        for path, item in schema["paths"].items()
        for method in item
        if method in {"get", "put", "post", "patch", "delete"}
    ]
    assert len(operations) > 40
    missing = [op for op in operations if op not in text]
    assert not missing, f"REST operations missing from the REST reference: {missing}"


def public_names(module_file: Path) -> list[str]:
    """``__all__`` of a module, read from its source (importing pedl.keras imports TF)."""
    tree = ast.parse(module_file.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            value = ast.literal_eval(node.value)
            return [str(name) for name in value]
    raise AssertionError(f"{module_file} has no __all__")


def words(text: str) -> str:
    """Letters and digits only, a Sphinx role (``:class:`x```) read as its name: text as
    a docstring says it and as the page shows it compare equal."""
    return re.sub(r"[^a-z0-9]", "", re.sub(r":[a-z]+:`~?\.?", "`", text).lower())


@pytest.mark.parametrize("package", ["keras", "core", "client"])
def test_python_api_pages_hold_every_public_name(site: Path, package: str) -> None:
    """Every name of the package's ``__all__`` has its entry on its API page, with the first
    paragraph of its docstring (read from the sources by griffe, as the site is)."""
    raw = (site / f"reference/python/{package}/index.html").read_text(encoding="utf-8")
    names = public_names(ROOT / "pedl" / package / "__init__.py")
    missing = [name for name in names if f'id="pedl.{package}.{name}"' not in raw]
    assert not missing, f"pedl.{package} names without their entry on its page: {missing}"
    module = griffe.GriffeLoader(search_paths=[str(ROOT)]).load(f"pedl.{package}")
    shown = words(html.unescape(re.sub(r"<[^>]+>", "", raw)))
    documented = [name for name in names if module[name].docstring is not None]
    assert len(documented) >= len(names) // 2
    without = [
        name
        for name in documented
        if words(module[name].docstring.value.split("\n\n")[0])[:80] not in shown
    ]
    assert not without, f"pedl.{package} names whose docstring is not on its page: {without}"


# --- the guides' examples load ------------------------------------------------------------

FENCE = re.compile(
    r"^(?:<!-- (?P<marker>test: run|file: [^ ]+) -->\n+)?```(?P<lang>\w+)[^\n]*\n(?P<body>.*?)^```",
    re.M | re.S,
)
"""A fenced block, with the marker line before it: ``<!-- test: run -->`` (the tests run it) or
``<!-- file: examples/... -->`` (it shows that file of the repository, which it must equal)."""


def blocks(lang: str) -> list[tuple[str, str, str]]:
    """(where, code, marker) of every ```lang block of the guides."""
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            if match["lang"] == lang:
                line = text.count("\n", 0, match.start()) + 1
                where = f"{page.relative_to(ROOT)}:{line}"
                found.append((where, match["body"], match["marker"] or ""))
    return found


def merged(base: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in part.items():
        out[key] = (
            merged(out[key], value)
            if isinstance(value, dict) and isinstance(out.get(key), dict)
            else value
        )
    return out


def test_every_config_block_loads() -> None:
    config_fields = set(ExperimentConfig.model_fields)
    master_fields = set(MasterSettings.model_fields)
    checked = {"config": 0, "master": 0}
    problems = []
    for where, body, _marker in blocks("yaml"):
        data = yaml.safe_load(body)
        assert isinstance(data, dict), f"{where}: a YAML block that is not a mapping"
        try:
            if "searcher" in data:  # a whole config (legacy names are translated)
                parse_config(data, name=where)
                checked["config"] += 1
            elif set(data) <= config_fields:  # a part of one
                parse_config(merged(MINIMAL_CONFIG, data), name=where)
                checked["config"] += 1
            elif set(data) <= master_fields:
                MasterSettings.model_validate(data)
                checked["master"] += 1
            else:
                problems.append(f"{where}: neither a config nor master settings: {sorted(data)}")
        except Exception as err:
            problems.append(f"{where}: {err}")
    assert not problems, "\n".join(problems)
    assert checked["config"] >= 10 and checked["master"] >= 1, checked


def test_every_python_block_compiles_and_the_marked_ones_run() -> None:
    problems = []
    ran = 0
    for where, body, marker in blocks("python"):
        try:
            code = compile(body, where, "exec")
        except SyntaxError as err:
            problems.append(f"{where}: {err}")
            continue
        if marker == "test: run":
            namespace: dict[str, Any] = {"__name__": "docs_example"}
            try:
                exec(code, namespace)
            except Exception as err:
                problems.append(f"{where}: running it raised {type(err).__name__}: {err}")
            ran += 1
    assert not problems, "\n".join(problems)
    assert ran >= 1


# --- strictness ---------------------------------------------------------------------------


def test_the_sites_settings_fail_a_build_on_a_broken_link(tmp_path: Path) -> None:
    """The same ``strict`` and ``validation`` settings as mkdocs.yml, on two small pages."""
    settings = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert settings["strict"] is True
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the guide](guide.md#no-such-part).\n")
    (docs / "guide.md").write_text("# Guide\n\nSee [a page that is not there](gone.md).\n")
    config = {
        "site_name": "t",
        "strict": settings["strict"],
        "validation": settings["validation"],
    }
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict"],
        cwd=tmp_path,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert result.returncode != 0
    assert "gone.md" in result.stderr and "no-such-part" in result.stderr


def test_blocks_that_show_a_file_of_the_repository_equal_it() -> None:
    shown = [
        (where, body, marker.removeprefix("file: "))
        for lang in ("python", "yaml", "bash")
        for where, body, marker in blocks(lang)
        if marker.startswith("file: ")
    ]
    assert len(shown) >= 3
    differ = [
        f"{where} differs from {path}"
        for where, body, path in shown
        if body.strip() != (ROOT / path).read_text(encoding="utf-8").strip()
    ]
    assert not differ, "\n".join(differ)


def module_source(module: str) -> Path | None:
    """The source file of a ``pedl`` or ``determined`` module, found without importing it."""
    root = ROOT / "compat" / "determined" if module.split(".")[0] == "determined" else ROOT
    base = root.joinpath(*module.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def defined_names(path: Path) -> set[str]:
    """The names a module defines or imports at its top level, and its ``__all__``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value:
                names.update(ast.literal_eval(node.value))  # a lazy module's names too
    return names


def test_the_python_blocks_import_what_pedl_has() -> None:
    """Every ``import pedl...`` / ``from pedl... import name`` (and ``determined``) of a Python
    block names a module and names that exist, read from the sources (no TensorFlow import)."""
    problems = []
    checked = 0
    for where, body, _marker in blocks("python"):
        for node in ast.walk(ast.parse(body)):
            modules: list[tuple[str, list[str]]] = []
            if isinstance(node, ast.Import):
                modules = [(alias.name, []) for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [(node.module, [alias.name for alias in node.names])]
            for module, names in modules:
                if module.split(".")[0] not in ("pedl", "determined"):
                    continue
                checked += 1
                path = module_source(module)
                if path is None:
                    problems.append(f"{where}: no module {module}")
                    continue
                have = defined_names(path)
                for name in names:
                    if name not in have and module_source(f"{module}.{name}") is None:
                        problems.append(f"{where}: {module} has no {name}")
    assert not problems, "\n".join(problems)
    assert checked >= 10


# --- README is the front page -------------------------------------------------------------

README = ROOT / "README.md"
LINK = re.compile(r"\]\((?!https?://|mailto:)([^)#\s]+)(?:#([^)\s]+))?\)")


def test_readme_is_a_front_page_whose_links_reach_the_site(site: Path) -> None:
    """README stays short (the guides hold the rest) and every link in it reaches a page of
    the site, and the anchor on it, that exists."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert text.startswith("# PEDL\n\n```bash\nmake demo")
    links = LINK.findall(text)
    assert len(links) >= 10
    broken = []
    for target, anchor in links:
        path = ROOT / target
        if not path.exists():
            broken.append(f"{target}: no such file")
            continue
        if anchor:
            assert target.startswith("docs/") and target.endswith(".md"), target
            page = target.removeprefix("docs/").removesuffix(".md")
            built = site / ("index.html" if page == "index" else f"{page}/index.html")
            if f'id="{anchor}"' not in built.read_text(encoding="utf-8"):
                broken.append(f"{target}#{anchor}: no such anchor")
    assert not broken, broken
