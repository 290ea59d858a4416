"""``pedl master``: run the master (REST API and orchestrator) in this process.

The server stack (FastAPI, uvicorn, SQLAlchemy, Alembic) is imported when the command runs,
not when ``pedl master --help`` shows its options."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from pedl.master import MasterSettings


@click.command("master")
@click.option("--host", default=None, help="Address to listen on [PEDL_HOST; 127.0.0.1].")
@click.option("--port", type=int, default=None, help="Port of the REST API [PEDL_PORT; 8080].")
@click.option(
    "--advertised-url",
    default=None,
    help="URL trial processes use to reach the master, e.g. through a proxy "
    "[PEDL_ADVERTISED_URL; http://HOST:PORT].",
)
@click.option("--db-url", default=None, help="SQLAlchemy URL [PEDL_DB_URL; sqlite in home].")
@click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="PEDL home directory [PEDL_HOME; ~/.pedl].",
)
@click.option(
    "--cpu-slots",
    type=int,
    default=None,
    help="Slots on a machine without GPUs [PEDL_CPU_SLOTS; half the cores].",
)
@click.option(
    "--worker-reuse/--no-worker-reuse",
    default=None,
    help="Run an experiment's trials one after another in warm processes that imported "
    "TensorFlow once, or each in a fresh process [PEDL_WORKER_REUSE; reuse].",
)
@click.option(
    "--spare-workers",
    type=click.IntRange(0, 64),
    default=None,
    help="Warm workers to start before any trial needs them, on CPU slots [PEDL_SPARE_WORKERS; 2].",
)
@click.option(
    "--worker-template/--no-worker-template",
    default=None,
    help="Fork warm workers (the spares, and those of experiments without environment "
    "variables) from one process that imported TensorFlow once [PEDL_WORKER_TEMPLATE; on].",
)
@click.option(
    "--worker-heartbeat-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds a worker of a multi-worker trial may send no heartbeat before it counts as "
    "hung and the attempt is restarted [PEDL_WORKER_HEARTBEAT_TIMEOUT; 60].",
)
@click.option(
    "--trial-user",
    default=None,
    help="OS user trials run as when the master runs as root; '' runs them as the master's "
    "user [PEDL_TRIAL_USER; nobody].",
)
@click.option(
    "--no-auth",
    "no_auth",
    is_flag=True,
    default=False,
    help="No accounts: every caller is the administrator. For a laptop only: refused unless "
    "the master listens on loopback [PEDL_AUTH=false].",
)
@click.option(
    "--config-file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="YAML file with any of these settings [PEDL_CONFIG_FILE].",
)
def master(
    host: str | None,
    port: int | None,
    advertised_url: str | None,
    db_url: str | None,
    home: Path | None,
    cpu_slots: int | None,
    worker_reuse: bool | None,
    spare_workers: int | None,
    worker_template: bool | None,
    worker_heartbeat_timeout: float | None,
    trial_user: str | None,
    no_auth: bool,
    config_file: Path | None,
) -> None:
    """Run the PEDL master. Flags beat PEDL_* environment variables, which beat the config
    file, which beats the defaults."""
    from sqlalchemy import make_url

    from pedl.master import serve
    from pedl.master._private import ExposedFilesError
    from pedl.master._serve import NO_AUTH_WARNING, ListenError

    given: dict[str, Any] = {
        "host": host,
        "port": port,
        "advertised_url": advertised_url,
        "db_url": db_url,
        "home": home,
        "cpu_slots": cpu_slots,
        "worker_reuse": worker_reuse,
        "spare_workers": spare_workers,
        "worker_template": worker_template,
        "worker_heartbeat_timeout": worker_heartbeat_timeout,
        "trial_user": trial_user,
        "auth": False if no_auth else None,
        "config_file": config_file,
    }
    settings = master_settings(**given)
    database = make_url(settings.db_url).render_as_string(hide_password=True)
    click.echo(f"Starting the PEDL master (home {settings.home}, database {database})")
    if not settings.auth:
        click.secho(f"WARNING: {NO_AUTH_WARNING}", fg="yellow", err=True)
    try:
        serve(settings)
    except (ListenError, ExposedFilesError) as err:  # one line, no traceback
        click.echo(f"pedl master: {err}", err=True)
        raise click.exceptions.Exit(1) from err


def master_settings(**flags: Any) -> MasterSettings:
    """:class:`MasterSettings` from the flags that were given (``None`` = not given); a bad
    setting is a :class:`click.ClickException` naming it."""
    from pydantic import ValidationError

    from pedl.master import MasterSettings

    given = {key: value for key, value in flags.items() if value is not None}
    try:
        return MasterSettings(**given)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'settings'}: {e['msg']}"
            for e in err.errors(include_url=False)
        )
        raise click.ClickException(f"invalid master settings: {problems}") from err
    except (OSError, ValueError) as err:
        raise click.ClickException(f"invalid master settings: {err}") from err
