"""``det trial support-bundle`` on a real master: a ``.tar.gz`` holding the trial's logs, the
master's latest log lines and the trial's and its experiment's records, as det writes it."""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

from click.testing import CliRunner

from pedl.cli._det import det
from pedl.client import Client
from tests.cli.test_cli_det import LOG_LINES, fill
from tests.client.helpers import LiveMaster


def test_support_bundle(master: LiveMaster, client: Client, tmp_path: Path) -> None:
    filled = fill(master, client, tmp_path / "filled")
    out_dir = tmp_path / "bundles"
    out_dir.mkdir()
    args = ["-m", master.url, "trial", "support-bundle", str(filled.trial_id), "-o", str(out_dir)]
    result = CliRunner().invoke(det, args)
    assert result.exit_code == 0, result.output
    match = re.fullmatch(r"bundle path: (.+\.tar\.gz)\n", result.output)
    assert match is not None, result.output
    path = Path(match.group(1))
    assert path.parent == out_dir
    assert path.name.startswith(f"det-bundle-trial-{filled.trial_id}-")
    with tarfile.open(path) as bundle:
        files = {Path(m.name).name: m for m in bundle.getmembers()}
        assert set(files) == {
            "trial_logs.txt",
            "master_logs.txt",
            "api_trial_call.json",
            "api_experiment_call.json",
        }

        def read(name: str) -> str:
            extracted = bundle.extractfile(files[name])
            assert extracted is not None
            return extracted.read().decode()

        assert read("trial_logs.txt").splitlines() == [m for m, _, _ in LOG_LINES]
        assert json.loads(read("api_trial_call.json"))["id"] == filled.trial_id
        assert json.loads(read("api_experiment_call.json"))["id"] == filled.experiment_id
        assert read("master_logs.txt")  # an administrator's: the lines, or why there are none
    missing = CliRunner().invoke(det, ["-m", master.url, "trial", "support-bundle", "999999"])
    assert missing.exit_code == 1 and "not found" in missing.output
