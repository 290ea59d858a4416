"""``pedl experiment ...``."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

from pedl.cli._display import RichTrialDisplay, summary_table
from pedl.config import ConfigError
from pedl.local import ExperimentSummary, LocalExperiment
from pedl.local._smoke import smoke_test
from pedl.model_def import ModelDefError


@click.group("experiment")
def experiment() -> None:
    """Create and manage experiments."""


@experiment.command("create")
@click.argument("config_file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("model_dir", type=click.Path(exists=True, path_type=Path))
@click.option("--local", is_flag=True, help="Run the experiment in this process, without a master.")
@click.option(
    "--test",
    "test_mode",
    is_flag=True,
    help="Only check the model definition: a short train chunk, a validation, a checkpoint, "
    "a restore.",
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
def create(
    config_file: Path,
    model_dir: Path,
    local: bool,
    test_mode: bool,
    overrides: tuple[str, ...],
    output_dir: Path,
) -> None:
    """Create an experiment from CONFIG_FILE and the model definition in MODEL_DIR."""
    console = Console(soft_wrap=True)
    if test_mode:
        _run_smoke_test(console, config_file, model_dir, overrides)
        return
    if not local:
        raise click.UsageError(
            "this version of PEDL runs experiments in local mode only: add --local"
        )
    try:
        exp = LocalExperiment.create(config_file, model_dir, output_dir, overrides=overrides)
    except (ConfigError, ModelDefError) as e:
        raise click.ClickException(str(e)) from e
    console.print(f"Created local experiment in [bold]{exp.directory}[/bold]")
    _run_local(console, exp)


@experiment.command("resume")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
def resume(directory: Path) -> None:
    """Continue an interrupted local experiment from its latest checkpoints."""
    console = Console(soft_wrap=True)
    exp = LocalExperiment(directory)
    console.print(f"Resuming local experiment in [bold]{exp.directory}[/bold]")
    _run_local(console, exp)


def _run_local(console: Console, exp: LocalExperiment) -> None:
    with RichTrialDisplay(console) as display:
        exp.display = display
        summary = exp.run()
    exp.close()
    _print_summary(console, summary)
    if summary.state == "PAUSED":
        console.print(
            f"Interrupted. Continue with: [bold]pedl experiment resume {summary.directory}[/bold]"
        )
        sys.exit(130)
    if summary.state == "ERROR":
        sys.exit(1)


def _print_summary(console: Console, summary: ExperimentSummary) -> None:
    console.print(summary_table(summary))
    for t in summary.trials:
        if t.state == "ERROR" and t.error:
            console.print(f"[red]Trial {t.trial_id} failed:[/red]\n{t.error}")
    best = summary.best_trial
    if best is not None:
        console.print(
            f"Best trial: {best.trial_id} ({summary.metric} = {best.best_metric:.4f}), "
            f"checkpoint: {best.best_checkpoint}"
        )


def _run_smoke_test(
    console: Console, config_file: Path, model_dir: Path, overrides: tuple[str, ...]
) -> None:
    steps = smoke_test(config_file, model_dir, overrides)
    for step in steps:
        mark = "[green]ok[/green]  " if step.ok else "[red]FAILED[/red]"
        console.print(f"{mark} {step.name}" + (f": {step.detail}" if step.detail else ""))
    if all(step.ok for step in steps):
        console.print("The model definition works with PEDL.")
    else:
        sys.exit(1)
