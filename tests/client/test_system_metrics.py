"""A trial's system metrics through the SDK and the CLI's table: samples posted the way a
trial process posts them, to a real master on loopback."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from rich.console import Console

from pedl.cli._trial import system_metrics_table
from pedl.client import Client

from .helpers import LiveMaster

START = datetime(2026, 1, 1, tzinfo=UTC)


def test_the_sdk_and_the_cli_read_a_trials_system_metrics(
    client: Client, master: LiveMaster, config_file: Path, model_dir: Path
) -> None:
    experiment = client.create_experiment(config_file, model_dir)
    trial_id, token = master.create_trial(experiment.id)
    for rank in (0, 1):
        samples = [
            {
                "time": (START + timedelta(seconds=5 * i)).isoformat(),
                "metrics": {"cpu_percent": 10.0 * (i + 1), "process_rss_bytes": 2.0**20 * (i + 1)},
            }
            for i in range(3)
        ]
        response = httpx.post(
            f"{master.url}/api/v1/trials/{trial_id}/system-metrics",
            json={"rank": rank, "samples": samples},
            headers={"Authorization": f"Bearer {token}"},
        )
        assert response.status_code == 200, response.text
    trial = client.get_trial(trial_id)
    samples = list(trial.iter_system_metrics())
    assert [(s.rank, s.metrics["cpu_percent"]) for s in samples] == [
        (0, 10.0), (0, 20.0), (0, 30.0), (1, 10.0), (1, 20.0), (1, 30.0),
    ]  # fmt: skip
    assert samples[0].time == START
    assert [s.rank for s in trial.iter_system_metrics(rank=1)] == [1, 1, 1]
    assert len(list(trial.iter_system_metrics(max_points=2))) == 4  # 2 per worker
    system = list(trial.iter_metrics("system"))
    assert system[0].group == "system" and system[0].metrics["rank"] == 0
    assert system[-1].end_time == START + timedelta(seconds=10)

    console = Console(width=160, record=True)
    console.print(system_metrics_table(samples, trial_id))
    text = console.export_text()
    assert "cpu (%)" in text and "process_rss (MiB)" in text
    # rank 0's cpu: mean 20.0, peak 30.0, latest 30.0, 3 samples
    assert any(
        line.split()
        == ["│", "0", "│", "cpu", "(%)", "│", "20.0", "│", "30.0", "│", "30.0", "│", "3", "│"]
        for line in text.splitlines()
    ), text
    console = Console(width=160, record=True)
    console.print(system_metrics_table([], trial_id))
    assert "No system metrics were recorded" in console.export_text()
