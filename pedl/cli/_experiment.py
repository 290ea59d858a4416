"""``pedl experiment ...``."""

from __future__ import annotations

import shutil
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from pedl.cli import _det_tables as det_tables
from pedl.cli import _workspace_tables as workspace_tables
from pedl.cli._aliases import AliasGroup
from pedl.cli._context import (
    console,
    csv_option,
    current_client,
    det_output,
    json_option,
    paginate,
    pagination_options,
    print_det_table,
    print_json,
)
from pedl.cli._display import format_number, print_warnings
from pedl.cli._failures import print_failures
from pedl.cli._presto import csv_text
from pedl.cli._progress import ExperimentProgress
from pedl.cli._tables import (
    checkpoints_table,
    experiment_table,
    experiments_table,
    trials_table,
)
from pedl.client import Client, Experiment, PEDLError, Trial


@click.group("experiment", cls=AliasGroup)
def experiment() -> None:
    """Create and manage experiments."""


@experiment.command("create")
@click.argument("config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument(
    "model_dir", type=click.Path(exists=True, path_type=Path), required=False, default=None
)
@click.option("--local", is_flag=True, help="Run the experiment in this process, without a master.")
@click.option(
    "--test",
    "test_mode",
    is_flag=True,
    help="Only check the model definition here: a short train chunk, a validation, a "
    "checkpoint, a restore.",
)
@click.option(
    "-t",
    "--test-mode",
    "master_test",
    is_flag=True,
    help="Submit a short test experiment to the master (one trial, a few batches, no "
    "restarts) and follow it to its end, as det's --test-mode does.",
)
@click.option(
    "--template",
    default=None,
    metavar="NAME",
    help="Merge this template (stored on the master) under the config (master mode).",
)
@click.option(
    "--follow-first-trial",
    is_flag=True,
    help="Print the first trial's logs until the experiment ends (master mode).",
)
@click.option(
    "-i",
    "--include",
    "includes",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    metavar="PATH",
    help="Also package this file or directory with the model definition (repeatable).",
)
@click.option(
    "--config",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override a config field, e.g. --config searcher.max_trials=4 (repeatable).",
)
@click.option(
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("pedl-local"),
    show_default=True,
    help="Local mode: where experiment directories are made (exp-1, exp-2, ...).",
)
@click.option("--paused", is_flag=True, help="Submit the experiment PAUSED (master mode).")
@click.option(
    "--project_id",
    "--project-id",
    "project_id",
    type=click.IntRange(min=1),
    default=None,
    help="Place this experiment inside this project (master mode; default: the config's "
    "workspace and project, else Uncategorized).",
)
@click.option(
    "-f",
    "--follow",
    is_flag=True,
    help="Show its progress until it ends, then the best trial and checkpoint (master mode); "
    "det's -f: --follow-first-trial.",
)
def create(
    config_file: Path,
    model_dir: Path | None,
    local: bool,
    test_mode: bool,
    master_test: bool,
    template: str | None,
    follow_first_trial: bool,
    includes: tuple[Path, ...],
    overrides: tuple[str, ...],
    output_dir: Path,
    paused: bool,
    project_id: int | None,
    follow: bool,
) -> None:
    """Create an experiment from CONFIG_FILE and the model definition in MODEL_DIR (default:
    the directory CONFIG_FILE is in).

    Without --local (or --test) the experiment is submitted to the master.
    """
    out = console()
    if follow and det_output():  # det's -f is --follow-first-trial
        follow, follow_first_trial = False, True
    model_dir = model_dir if model_dir is not None else config_file.resolve().parent
    with _with_includes(model_dir, includes) as packaged:
        if not (test_mode or local):
            if paused and (master_test or follow_first_trial or follow):
                raise click.UsageError(
                    "--paused cannot be combined with --test-mode, --follow or "
                    "--follow-first-trial (a paused experiment does not run)"
                )
            _create_on_master(
                out,
                config_file,
                packaged,
                overrides,
                paused,
                follow,
                master_test=master_test,
                template=template,
                follow_first_trial=follow_first_trial,
                project_id=project_id,
            )
            return
        # A run in this process: only it imports local mode (the engine, the database layer,
        # TensorFlow once a trial runs); the commands that talk to a master stay light.
        from pedl.cli import _local_run

        if test_mode:
            _local_run.run_smoke_test(out, config_file, packaged, overrides)
            return
        if paused or follow or master_test or follow_first_trial or template or project_id:
            raise click.UsageError(
                "--paused and --follow apply to experiments on a master (and so do "
                "--test-mode, --template, --project_id and --follow-first-trial)"
            )
        _local_run.create_local(out, config_file, packaged, overrides, output_dir)


@contextmanager
def _with_includes(model_dir: Path, includes: tuple[Path, ...]) -> Iterator[Path]:
    """``model_dir``, or (with ``-i`` paths) a temporary copy of it with each included file
    or directory beside its contents under its own name."""
    if not includes:
        yield model_dir
        return
    with tempfile.TemporaryDirectory(prefix="pedl-model-def-") as tmp:
        packaged = Path(tmp) / model_dir.resolve().name
        shutil.copytree(model_dir, packaged, symlinks=True)
        for path in includes:
            target = packaged / path.resolve().name
            if target.exists():
                raise click.UsageError(f"--include {path}: {target.name} is in MODEL_DIR already")
            if path.is_dir():
                shutil.copytree(path, target, symlinks=True)
            else:
                shutil.copy2(path, target)
        yield packaged


@experiment.command("resume")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
def resume(directory: Path) -> None:
    """Continue an interrupted local experiment from its latest checkpoints."""
    from pedl.cli import _local_run  # local mode: the engine, the database layer

    _local_run.resume_local(console(), directory)


TEST_MODE_BATCHES = 10
"""How many batches the one trial of a ``--test-mode`` experiment trains."""


def test_mode_config(document: dict[str, Any]) -> dict[str, Any]:
    """The config of ``det``'s ``--test-mode`` experiment: one trial (``single`` searcher,
    same metric) of :data:`TEST_MODE_BATCHES` batches, no restarts, named as a test."""
    searcher = document.get("searcher") or {}
    test = dict(document)
    test["searcher"] = {
        key: searcher[key] for key in ("metric", "smaller_is_better") if key in searcher
    }
    test["searcher"].update(name="single", max_length={"batches": TEST_MODE_BATCHES})
    test["max_restarts"] = 0
    test["name"] = f"{document.get('name') or 'experiment'} (test mode)"
    return test


def _create_on_master(
    console: Console,
    config_file: Path,
    model_dir: Path,
    overrides: tuple[str, ...],
    paused: bool,
    follow: bool,
    *,
    master_test: bool = False,
    template: str | None = None,
    follow_first_trial: bool = False,
    project_id: int | None = None,
) -> None:
    # The config's models: only where an experiment is made (lists and describes never).
    from pedl.client import merge_template
    from pedl.config import ConfigError, ConfigWarning
    from pedl.config._overrides import overridden_document
    from pedl.model_def import ModelDefError

    client = current_client()
    config: Any = config_file
    if master_test:
        try:
            document = overridden_document(config_file.read_text(encoding="utf-8"), overrides)
        except ConfigError as e:
            raise click.ClickException(str(e)) from e
        # The master merges the template (its secrets are masked in what the client sees);
        # the test mode's searcher is worked out from both, as the master will merge them.
        shown = document
        if template is not None:
            shown = merge_template(document, client.get_template(template))
        test = test_mode_config(shown)
        config = {**document, **{key: test[key] for key in ("searcher", "max_restarts", "name")}}
        overrides = ()
    try:
        # Printed below from the master's answer, not a second time by Python's warnings.
        with warnings.catch_warnings(action="ignore", category=ConfigWarning):
            exp = client.create_experiment(
                config,
                model_dir,
                overrides=overrides,
                activate=not paused,
                template=template,
                project_id=project_id,
            )
    except ModelDefError as e:
        raise click.ClickException(str(e)) from e
    print_warnings(console, exp.to_dict().get("warnings", []))
    what = "test experiment" if master_test else "experiment"
    console.print(f"Created {what} {exp.id} ({exp.state}) on {client.master}")
    if follow_first_trial:
        trial = exp.await_first_trial(interval=0.5)
        for line in trial.logs(follow=True, interval=1.0):
            click.echo(line.message)
    if follow or master_test or follow_first_trial:
        _follow(console, exp, interval=2.0)


def _follow(console: Console, exp: Experiment, *, interval: float) -> None:
    """Show the progress bar until the experiment ends, then the best trial; exit 1 unless
    it COMPLETED."""
    with ExperimentProgress(console) as bar:
        state = exp.wait(interval=interval, on_poll=bar.update)
    console.print(f"Experiment {exp.id} ended: {state}")
    print_failures(console, exp, exp.list_trials())
    best = exp.top_checkpoint()
    if best is not None:
        console.print(
            f"Best trial: {best.trial_id} ({exp.searcher_metric} = "
            f"{format_number(best.metric(exp.searcher_metric or ''))}), checkpoint: {best.uuid}"
        )
    if state != "COMPLETED":
        sys.exit(1)


EXPERIMENT_ID = click.argument("experiment_id", type=click.IntRange(min=1))


@experiment.command("list")
@click.option(
    "--state", "states", multiple=True, help="Only experiments in this state (repeatable)."
)
@click.option("-a", "--all", "show_all", is_flag=True, help="Archived experiments too.")
@click.option(
    "--project_id",
    "--project-id",
    "project_id",
    type=click.IntRange(min=1),
    default=None,
    help="Only the experiments of this project.",
)
@click.option(
    "--show_project",
    "--show-project",
    "show_project",
    is_flag=True,
    help="Include columns for workspace name and project name.",
)
@json_option
@csv_option
@pagination_options
def list_experiments(
    states: tuple[str, ...],
    show_all: bool,
    project_id: int | None,
    show_project: bool,
    as_json: bool,
    as_csv: bool,
    limit: int,
    offset: int,
    pages: str,
) -> None:
    """List the master's experiments, newest first (not the archived ones unless --all).

    As ``det``: oldest first, and only yours unless --all, as det lists them."""
    client = current_client()
    users = _det_own(client) if det_output() and not show_all else None
    experiments = client.list_experiments(
        states=[s.upper() for s in states],
        archived=None if show_all else False,
        users=users,
        project_id=project_id,
    )
    if det_output():
        experiments.sort(key=lambda e: e.id)
    experiments = paginate(experiments, limit, offset, pages)
    if as_json:
        print_json([e.to_dict() for e in experiments])
    elif as_csv or det_output():
        table = det_tables.experiments(experiments, show_archived=show_all)
        if show_project:
            table = workspace_tables.with_project_columns(table, experiments)
        print_det_table(table, as_csv)
    else:
        console().print(experiments_table(experiments, show_project=show_project))


@experiment.command("move")
@EXPERIMENT_ID
@click.argument("workspace_name")
@click.argument("project_name")
def move(experiment_id: int, workspace_name: str, project_name: str) -> None:
    """Move an experiment into the project PROJECT_NAME of the workspace WORKSPACE_NAME
    (det's ``experiment move``; its owner or an administrator)."""
    current_client().get_experiment(experiment_id).move_to_project(workspace_name, project_name)
    click.echo(f'Moved experiment {experiment_id} to project "{project_name}"')


def _det_own(client: Client) -> list[str] | None:
    """``det experiment list``'s users without --all: the signed-in one (none to filter by on
    a master that does not know one, such as one run with --no-auth)."""
    try:
        return [client.whoami().username]
    except PEDLError:
        return None


class _IdList(click.ParamType):
    """det's ``EXPERIMENT_IDS``: one id, or several comma-separated (``3,5``)."""

    name = "ids"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, list):
            return value
        try:
            ids = [int(part) for part in str(value).split(",")]
        except ValueError:
            self.fail(f"{value!r} is not an id or comma-separated ids", param, ctx)
        if any(i < 1 for i in ids):
            self.fail(f"{value!r}: ids are 1 or more", param, ctx)
        return ids


@experiment.command("describe")
@click.argument("experiment_ids", type=_IdList(), metavar="EXPERIMENT_ID[,EXPERIMENT_ID...]")
@json_option
@csv_option
@click.option(
    "--outdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="det's tables as CSV files in this directory (experiments.csv, trials.csv, "
    "workloads.csv) instead of on the screen.",
)
def describe(experiment_ids: list[int], as_json: bool, as_csv: bool, outdir: Path | None) -> None:
    """Show an experiment and its trials (and the warm workers that ran its trials and
    exited by themselves); several, comma-separated."""
    client = current_client()
    exps = [client.get_experiment(i) for i in experiment_ids]
    trials = {exp.id: exp.list_trials() for exp in exps}
    if not as_json and (as_csv or outdir is not None or det_output()):
        _det_describe(exps, trials, as_csv, outdir)
        return
    for exp in exps:
        _describe(client, exp, trials[exp.id], as_json)


def _describe(client: Client, exp: Experiment, trials: list[Trial], as_json: bool) -> None:
    exits = _worker_exits(client, exp.id)
    if as_json:
        print_json(
            {**exp.to_dict(), "trials": [t.to_dict() for t in trials], "worker_exits": exits}
        )
        return
    out = console()
    out.print(experiment_table(exp))
    out.print(trials_table(trials, exp.searcher_metric))
    print_failures(out, exp, trials)
    for gone in exits:
        out.print(
            f"[yellow]The warm worker process {gone['pid']}, which ran trial "
            f"{gone['trial_id']}, exited by itself while idle ({escape(str(gone['exit']))}) at "
            f"{escape(str(gone['at']))}.[/yellow]"
        )


def _det_describe(
    exps: list[Experiment], trials: dict[int, list[Trial]], as_csv: bool, outdir: Path | None
) -> None:
    """``det experiment describe``: the experiments, their trials, their workloads; with
    ``outdir``, as det, the three tables as CSV files there and nothing on the screen."""
    every = [t for exp in exps for t in trials[exp.id]]
    reports = [(t, t.metrics(), t.list_checkpoints()) for t in every]
    tables = {
        "Experiment": ("experiments.csv", det_tables.experiment_summary(exps)),
        "Trials": ("trials.csv", det_tables.experiment_trials(every)),
        "Workloads": ("workloads.csv", det_tables.experiment_workloads(reports)),
    }
    if outdir is not None:
        outdir.mkdir(parents=True, exist_ok=True)
        for file_name, (headers, rows) in tables.values():
            (outdir / file_name).write_text(csv_text(headers, rows), newline="")
        return
    for i, (title, (_, table)) in enumerate(tables.items()):
        click.echo(("\n" if i else "") + f"{title}:")
        print_det_table(table, as_csv)


def _worker_exits(client: Client, experiment_id: int) -> list[dict[str, Any]]:
    """The master's warm workers that ran trials of the experiment and exited by themselves
    while idle (``GET /cluster``; none from a master that does not list them)."""
    cluster = client.session.get("/cluster")
    exits = cluster.get("worker_exits", []) if isinstance(cluster, dict) else []
    return [gone for gone in exits if gone.get("experiment_id") == experiment_id]


def _action_command(action: str, help_text: str) -> None:
    @experiment.command(action, help=help_text)
    @EXPERIMENT_ID
    def command(experiment_id: int) -> None:
        exp = current_client().get_experiment(experiment_id)
        getattr(exp, action)()
        console().print(f"Experiment {exp.id}: {exp.state}")


_action_command("pause", "Pause an active experiment.")
_action_command("activate", "Resume a paused experiment.")
_action_command("cancel", "Stop an experiment gracefully (trials checkpoint first).")
_action_command("kill", "Stop an experiment at once.")


@experiment.command("wait")
@EXPERIMENT_ID
@click.option(
    "--interval",
    "--polling-interval",
    "interval",
    type=click.FloatRange(min=0.01),
    default=2.0,
    show_default=True,
    help="Seconds between polls.",
)
def wait(experiment_id: int, interval: float) -> None:
    """Show an experiment's progress until it ends; exit 1 unless it COMPLETED."""
    exp = current_client().get_experiment(experiment_id)
    _follow(console(), exp, interval=interval)


@experiment.command("list-trials")
@EXPERIMENT_ID
@json_option
@csv_option
@pagination_options
def list_trials(
    experiment_id: int, as_json: bool, as_csv: bool, limit: int, offset: int, pages: str
) -> None:
    """List an experiment's trials."""
    exp = current_client().get_experiment(experiment_id)
    trials = paginate(exp.list_trials(), limit, offset, pages)
    if as_json:
        print_json([t.to_dict() for t in trials])
    elif as_csv or det_output():
        print_det_table(det_tables.trials(trials), as_csv)
    else:
        console().print(trials_table(trials, exp.searcher_metric))


@experiment.command("list-checkpoints")
@EXPERIMENT_ID
@click.option(
    "--best",
    type=click.IntRange(min=1),
    default=None,
    help="Only the N best by the searcher metric, best first.",
)
@json_option
@csv_option
def list_checkpoints(experiment_id: int, best: int | None, as_json: bool, as_csv: bool) -> None:
    """List an experiment's checkpoints (oldest first, or the best N)."""
    exp = current_client().get_experiment(experiment_id)
    checkpoints = exp.list_checkpoints() if best is None else exp.top_n_checkpoints(best)
    if as_json:
        print_json([c.to_dict() for c in checkpoints])
    elif as_csv or det_output():
        print_det_table(det_tables.checkpoints(checkpoints, exp.searcher_metric), as_csv)
    else:
        console().print(checkpoints_table(checkpoints, f"Checkpoints of experiment {exp.id}"))


@experiment.command("download")
@EXPERIMENT_ID
@click.option(
    "--top-n",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="How many of the best checkpoints to download.",
)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("checkpoints"),
    show_default=True,
    help="Each checkpoint goes to OUTPUT_DIR/<uuid>.",
)
@click.option(
    "--sort-by",
    default=None,
    metavar="METRIC",
    help="The validation metric to rank by (default: the searcher's).",
)
@click.option(
    "--smaller-is-better",
    type=click.Choice(["true", "false"], case_sensitive=False),
    default=None,
    help="Which way --sort-by ranks (default: the searcher's way for its metric, else true).",
)
@click.option("-q", "--quiet", is_flag=True, help="Only print the paths, one a line.")
def download(
    experiment_id: int,
    top_n: int,
    output_dir: Path,
    sort_by: str | None,
    smaller_is_better: str | None,
    quiet: bool,
) -> None:
    """Download the best checkpoints of an experiment (by its searcher metric, or
    --sort-by)."""
    exp = current_client().get_experiment(experiment_id)
    smaller = None if smaller_is_better is None else smaller_is_better.lower() == "true"
    best = exp.top_n_checkpoints(top_n, sort_by=sort_by, smaller_is_better=smaller)
    if not best:
        raise click.ClickException(
            f"experiment {exp.id} has no completed checkpoint with a validation "
            f"{sort_by or exp.searcher_metric}"
        )
    out = console()
    for checkpoint in best:
        path = checkpoint.download(output_dir / checkpoint.uuid)
        if quiet:
            click.echo(str(path))
        else:
            out.print(f"Checkpoint {checkpoint.uuid} (trial {checkpoint.trial_id}) -> {path}")
