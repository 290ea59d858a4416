"""``det trial support-bundle``: one ``.tar.gz`` with what a trial's problem report needs, as
Determined 0.38.1 writes it (its logs, the master's latest log lines, the trial's and its
experiment's records as JSON), under ``det-bundle-trial-<id>-<time>/``."""

from __future__ import annotations

import io
import json
import tarfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from pedl.cli._context import current_client
from pedl.client import PEDLError


def _add(bundle: tarfile.TarFile, name: str, text: str) -> None:
    data = text.encode("utf-8")
    member = tarfile.TarInfo(name)
    member.size = len(data)
    member.mtime = int(time.time())
    member.mode = 0o644
    bundle.addfile(member, io.BytesIO(data))


def _master_log(records: list[dict[str, Any]]) -> str:
    if not records:
        return "(the master has no log lines to give: it keeps none in this process)\n"
    return "".join(
        f"[{r['timestamp']}] [{r['level']}] {r['logger']}: {r['message']}\n" for r in records
    )


@click.command("support-bundle")
@click.argument("trial_id", type=int)
@click.option(
    "-o",
    "--output-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Where the bundle goes (default: the current directory).",
)
def support_bundle(trial_id: int, output_dir: Path | None) -> None:
    """Write a trial's support bundle (.tar.gz) and print its path: its logs, the master's
    latest lines (an administrator's; otherwise why not) and the trial's and experiment's
    records as JSON."""
    client = current_client()
    trial = client.get_trial(trial_id)
    experiment = client.get_experiment(trial.experiment_id)
    logs = "".join(f"{line.message}\n" for line in trial.logs())
    try:
        master_logs = _master_log(client.session.get("/master/logs", params={"tail": 10_000}))
    except PEDLError as err:
        master_logs = f"the master's logs are not included: {err}\n"
    name = f"det-bundle-trial-{trial_id}-{datetime.now().strftime('%Y%m%dT%H%M%S')}"
    path = (output_dir or Path.cwd()) / f"{name}.tar.gz"
    with tarfile.open(path, "w:gz") as bundle:
        _add(bundle, f"{name}/trial_logs.txt", logs)
        _add(bundle, f"{name}/master_logs.txt", master_logs)
        _add(bundle, f"{name}/api_trial_call.json", json.dumps(trial.to_dict(), default=str))
        _add(
            bundle,
            f"{name}/api_experiment_call.json",
            json.dumps(experiment.to_dict(), default=str),
        )
    click.echo(f"bundle path: {path}")
