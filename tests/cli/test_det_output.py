"""``det``'s output, golden: what ``det`` 0.38.1 prints for the same records, its header line,
its dashes line and its CSV header, written out here from det's sources (the function each
comes from is named beside it), against PEDL's ``det`` run as a subprocess on a real master.

det prints every list through ``determined.cli.render.tabulate_or_csv`` (``tabulate`` with
``tablefmt="presto"``, or ``csv.writer`` with ``--csv``), or ``render.render_objects`` (the
same presto table; headers from a namedtuple's fields, title-cased)."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from pedl.cli._presto import csv_text, grid, presto
from pedl.client import Client
from tests.accounts import ADMIN
from tests.cli.test_det_command import DET, signed_in
from tests.client.helpers import (
    LiveMaster,
    report,
    store_checkpoint,
    write_config,
    write_model_dir,
)
from tests.waits import scaled

# determined/cli/experiment.py, list_experiments: headers (+ "Archived" with --all).
EXPERIMENT_LIST = [
    "ID",
    "Owner",
    "Name",
    "Parent ID",
    "State",
    "Progress",
    "Started",
    "Ended",
    "Resource Pool",
]
# determined/cli/experiment.py, list_trials.
LIST_TRIALS = ["Trial ID", "State", "H-Params", "Started", "Ended", "# of Batches"]
# determined/cli/checkpoint.py, list_checkpoints (det e lc).
LIST_CHECKPOINTS = [
    "Trial ID",
    "# of Batches",
    "State",
    "Validation Metric",
    "UUID",
    "Resources",
    "Size",
]
# determined/cli/experiment.py, describe: "Experiment:", "Trials:", "Workloads:" tables.
DESCRIBE_EXPERIMENT = [
    "Experiment ID",
    "State",
    "Progress",
    "Started",
    "Ended",
    "Name",
    "Description",
    "Archived",
    "Resource Pool",
    "Labels",
]
DESCRIBE_TRIALS = ["Trial ID", "Experiment ID", "State", "Started", "Ended", "H-Params"]
DESCRIBE_WORKLOADS = [
    "Trial ID",
    "# of Batches",
    "State",
    "Report Time",
    "Checkpoint State",
    "Checkpoint Report Time",
    "Validation State",
    "Validation Report Time",
]
# determined/cli/trial.py, describe_trial and _workloads_tabulate.
TRIAL_DESCRIBE = ["Experiment ID", "State", "H-Params", "Summary Metrics", "Started", "Ended"]
TRIAL_WORKLOADS = [
    "# of Batches",
    "Report Time",
    "Checkpoint",
    "Checkpoint UUID",
    "Checkpoint Metadata",
    "Validation Metrics",
]
# determined/cli/user.py, FullUser through render.render_objects (field names title-cased).
USER_LIST = [
    "User Id",
    "Username",
    "Display Name",
    "Admin",
    "Active",
    "Remote",
    "Agent Uid",
    "Agent Gid",
    "Agent User",
    "Agent Group",
]
# determined/cli/model.py, list_models.
MODEL_LIST = ["ID", "Name", "Workspace ID", "Creation Time", "Last Updated Time", "Metadata"]
# determined/cli/ntsc.py, TensorboardTableHeader (det tensorboard list).
TENSORBOARD_LIST = [
    "id",
    "username",
    "description",
    "state",
    "experimentIds",
    "trialIds",
    "exitStatus",
    "resourcePool",
    "workspaceName",
]
# determined/cli/template.py, TemplateClean through render.render_objects.
TEMPLATE_LIST = ["Name", "Workspace"]

SEPARATOR = re.compile(r"^-+(\+-+)*$")


def test_presto_as_tabulate_writes_it() -> None:
    """tabulate 0.9's presto (what det's render.tabulate_or_csv prints): a column is at least
    its header plus 2 wide, padded by one space each side; numbers right-aligned (floats on
    their points, "g"), text left; None empty; a cell's lines under each other; line ends
    stripped. Expected text from ``tabulate.tabulate(rows, headers, tablefmt="presto")``."""
    headers = ["Trial ID", "State", "H-Params", "Metric"]
    rows = [
        [1, "COMPLETED", '{\n    "lr": 0.1\n}', 0.25],
        [12, "ACTIVE", "{}", None],
        [3, None, "{}", "1.5"],
    ]
    assert presto(headers, rows) == (
        "   Trial ID | State     | H-Params      |   Metric\n"
        "------------+-----------+---------------+----------\n"
        "          1 | COMPLETED | {             |     0.25\n"
        '            |           |     "lr": 0.1 |\n'
        "            |           | }             |\n"
        "         12 | ACTIVE    | {}            |\n"
        "          3 |           | {}            |     1.5"
    )
    assert presto(["ID", "Name"], []) == " ID   | Name\n------+--------"
    assert csv_text(["ID", "Name"], [[1, None], [2, "a,b"]]) == 'ID,Name\r\n1,\r\n2,"a,b"\r\n'


def check_table(text: str, headers: list[str], rows: int | None = None) -> list[list[str]]:
    """``text`` is a presto table with ``headers`` in this order: its header line splits into
    them, padded to their columns' widths, its dashes line has one run per column as wide as
    it (plus its two spaces); the cells of its data lines."""
    lines = text.rstrip("\n").split("\n")
    header_cells = lines[0].split("|")
    assert [c.strip() for c in header_cells] == headers, lines[0]
    assert SEPARATOR.match(lines[1]), lines[1]
    runs = lines[1].split("+")
    assert len(runs) == len(headers)
    for i, (cell, run) in enumerate(zip(header_cells, runs, strict=True)):
        if i < len(headers) - 1:  # the last one's padding is stripped
            assert len(cell) == len(run), (cell, run)
        assert len(run) >= len(headers[i]) + 4  # tabulate's MIN_PADDING, and a space each side
    data = [line.split("|") for line in lines[2:]]
    for cells in data:
        assert len(cells) == len(headers)
    if rows is not None:
        assert len(data) == rows
    return [[c.strip() for c in cells] for cells in data]


def check_csv(text: str, headers: list[str]) -> list[list[str]]:
    assert text.startswith(",".join(f'"{h}"' if "," in h else h for h in headers) + "\r\n")
    parsed = list(csv.reader(io.StringIO(text)))
    assert parsed[0] == headers
    return parsed[1:]


@dataclass
class Filled:
    experiment_id: int
    trial_id: int
    uuids: list[str]
    env: dict[str, str]
    config: Path
    model_dir: Path


@pytest.fixture(scope="module")
def filled(master: LiveMaster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Filled]:
    """An experiment with one trial: a training report, two validations, two checkpoints."""
    root = tmp_path_factory.mktemp("det-output")
    storage = root / "checkpoints"
    storage.mkdir()
    config, model_dir = write_config(root, storage), write_model_dir(root)
    with Client(master.url) as client:
        exp = client.create_experiment(config, model_dir)
        trial_id, token = master.create_trial(exp.id, lr=0.1)
        uuids = []
        with master.trial_api(token) as api:
            report(api, trial_id, "training", 5, loss=0.5)
            report(api, trial_id, "validation", 5, val_loss=0.4)
            report(api, trial_id, "validation", 10, val_loss=0.3)
            for batches in (5, 10):
                uuids.append(store_checkpoint(api, trial_id, storage, batches, {"w.bin": b"w"}))
        client.create_model("det-output-model")
        client.set_template("det-output-template", {"description": "x"})
        client.create_user("det-output-other", "det-output-password-1")
    yield Filled(exp.id, trial_id, uuids, signed_in(master, root), config, model_dir)


def det_out(filled: Filled, *args: str) -> str:
    """``det ARGS``'s output as written (CSV's ``\r\n`` line ends kept)."""
    result = subprocess.run(
        [str(DET), *args], env=filled.env, capture_output=True, timeout=scaled(120)
    )
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def test_experiment_list(filled: Filled) -> None:
    for args in (["e", "list"], ["experiment", "ls"]):
        rows = check_table(det_out(filled, *args), EXPERIMENT_LIST)
        row = next(r for r in rows if r[0] == str(filled.experiment_id))
        assert row[1] == ADMIN and row[4] == "ACTIVE" and row[8] == "default"
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\+0000", row[6])
        assert re.fullmatch(r"\d+\.\d%", row[5])
    check_table(det_out(filled, "e", "list", "--all"), [*EXPERIMENT_LIST, "Archived"])
    parsed = check_csv(det_out(filled, "e", "list", "--csv"), EXPERIMENT_LIST)
    assert str(filled.experiment_id) in [r[0] for r in parsed]
    # A script's way: the id of the first data line, by awk's fields.
    first = det_out(filled, "e", "list").splitlines()[2]
    assert first.split()[0].isdigit()


def test_experiment_list_is_yours_oldest_first_unless_all(filled: Filled) -> None:
    """det lists the signed-in user's experiments, oldest first; --all everyone's."""
    env = {**filled.env, "DET_PASS": "det-output-password-1"}
    paused = [str(filled.model_dir), "--paused"]
    created = subprocess.run(
        [str(DET), "-u", "det-output-other", "e", "create", str(filled.config), *paused],
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(120),
    )
    assert created.returncode == 0, created.stderr
    other = int(re.findall(r"Created experiment (\d+)", created.stdout)[0])
    mine = [int(r[0]) for r in check_table(det_out(filled, "e", "list"), EXPERIMENT_LIST)]
    assert other not in mine and filled.experiment_id in mine and mine == sorted(mine)
    every = check_table(det_out(filled, "e", "list", "--all"), [*EXPERIMENT_LIST, "Archived"])
    assert [other, "det-output-other"] in [[int(r[0]), r[1]] for r in every]


def test_limit_offset_pages(filled: Filled) -> None:
    """det's --limit/--offset/--pages on e list and e lt: --pages all (the default) from
    --offset on; --pages 1, at most --limit."""
    every_column = [*EXPERIMENT_LIST, "Archived"]
    det_out(filled, "e", "create", str(filled.config), str(filled.model_dir), "--paused")
    every = [r[0] for r in check_table(det_out(filled, "e", "list", "--all"), every_column)]
    assert len(every) >= 2
    listed = det_out(filled, "e", "list", "--all", "--offset", "1", "--limit", "1")
    assert [r[0] for r in check_table(listed, every_column)] == every[1:]
    one = det_out(filled, "e", "list", "--all", "--limit", "1", "--pages", "1")
    assert [r[0] for r in check_table(one, every_column)] == every[:1]
    trial = str(filled.experiment_id)
    assert check_csv(det_out(filled, "e", "lt", trial, "--offset", "1", "--csv"), LIST_TRIALS) == []


def test_list_trials(filled: Filled) -> None:
    for verb in ("list-trials", "lt"):
        text = det_out(filled, "e", verb, str(filled.experiment_id))
        # One trial, its hyperparameters over three lines (json.dumps(indent=4)).
        rows = check_table(text, LIST_TRIALS, rows=3)
        assert rows[0][0] == str(filled.trial_id) and rows[0][1] == "ACTIVE"
        assert rows[0][5].isdigit() and rows[0][2] == "{" and rows[1][2] == '"lr": 0.1'
        assert text.splitlines()[0] == (
            "   Trial ID | State   | H-Params      | Started                  | Ended   |"
            "   # of Batches"
        )
    parsed = check_csv(det_out(filled, "e", "lt", str(filled.experiment_id), "--csv"), LIST_TRIALS)
    assert parsed[0][0] == str(filled.trial_id) and parsed[0][2] == '{\n    "lr": 0.1\n}'


def test_list_checkpoints(filled: Filled) -> None:
    for verb in ("list-checkpoints", "lc"):
        text = det_out(filled, "e", verb, str(filled.experiment_id))
        rows = check_table(text, LIST_CHECKPOINTS, rows=2)
        assert [r[4] for r in rows] == filled.uuids
        assert rows[0][:4] == [str(filled.trial_id), "5", "COMPLETED", "0.4"]
        assert rows[0][5:] == ["w.bin", "1.0B"]
    parsed = check_csv(
        det_out(filled, "e", "lc", str(filled.experiment_id), "--csv"), LIST_CHECKPOINTS
    )
    assert [r[4] for r in parsed] == filled.uuids


def test_experiment_describe(filled: Filled) -> None:
    text = det_out(filled, "e", "describe", str(filled.experiment_id))
    experiment, trials, workloads = re.split(r"\n\n(?:Trials|Workloads):\n", text)
    assert experiment.startswith("Experiment:\n")
    rows = check_table(experiment.removeprefix("Experiment:\n"), DESCRIBE_EXPERIMENT, rows=1)
    assert rows[0][0] == str(filled.experiment_id) and rows[0][7] == "False"
    rows = check_table(trials, DESCRIBE_TRIALS)
    assert rows[0][:3] == [str(filled.trial_id), str(filled.experiment_id), "ACTIVE"]
    rows = check_table(workloads, DESCRIBE_WORKLOADS, rows=2)
    assert [r[1] for r in rows] == ["5", "10"]
    assert rows[0][2] == "COMPLETED" and rows[0][4] == "COMPLETED" and rows[0][6] == "COMPLETED"
    as_csv = det_out(filled, "e", "describe", str(filled.experiment_id), "--csv")
    parts = re.split(r"\n(?:Trials|Workloads):\n", as_csv)
    check_csv(parts[0].removeprefix("Experiment:\n"), DESCRIBE_EXPERIMENT)
    check_csv(parts[1], DESCRIBE_TRIALS)
    check_csv(parts[2], DESCRIBE_WORKLOADS)


def test_experiment_describe_several_and_to_files(filled: Filled, tmp_path: Path) -> None:
    """det's EXPERIMENT_IDS (comma-separated) and --outdir (experiments.csv, trials.csv,
    workloads.csv, nothing on the screen: describe's outfile)."""
    first = filled.experiment_id
    other = int(
        re.findall(
            r"Created experiment (\d+)",
            det_out(filled, "e", "create", str(filled.config), str(filled.model_dir), "--paused"),
        )[0]
    )
    text = det_out(filled, "e", "describe", f"{first},{other}")
    rows = check_table(
        text.split("\n\nTrials:\n")[0].removeprefix("Experiment:\n"), DESCRIBE_EXPERIMENT, rows=2
    )
    assert [r[0] for r in rows] == [str(first), str(other)]
    assert det_out(filled, "e", "describe", f"{first},{other}", "--outdir", str(tmp_path)) == ""
    for name, headers in (
        ("experiments.csv", DESCRIBE_EXPERIMENT),
        ("trials.csv", DESCRIBE_TRIALS),
        ("workloads.csv", DESCRIBE_WORKLOADS),
    ):
        check_csv((tmp_path / name).read_bytes().decode(), headers)
    bad = subprocess.run(
        [str(DET), "e", "describe", "1,x"], env=filled.env, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "comma-separated" in bad.stderr


def test_trial_describe(filled: Filled) -> None:
    text = det_out(filled, "t", "describe", str(filled.trial_id))
    summary, workloads = text.split("\n\nWorkloads:\n")
    rows = check_table(summary, TRIAL_DESCRIBE)
    assert rows[0][:2] == [str(filled.experiment_id), "ACTIVE"]
    assert '"validation_metrics": {' in summary
    rows = check_table(workloads, TRIAL_WORKLOADS)
    assert filled.uuids[0] in [r[3] for r in rows]
    with_metrics = det_out(filled, "t", "describe", str(filled.trial_id), "--metrics")
    check_table(with_metrics.split("\n\nWorkloads:\n")[1], [*TRIAL_WORKLOADS, "Workload Metrics"])
    summarized = det_out(filled, "t", "describe", str(filled.trial_id), "--metrics-summary")
    summary = json.loads(summarized[summarized.rindex("\n{\n") :])
    assert summary["validation_metrics"]["val_loss"]["count"] == 2
    assert summary["validation_metrics"]["val_loss"]["last"] == 0.3
    assert summary["avg_metrics"]["loss"]["min"] == 0.5
    parts = det_out(filled, "trial", "describe", str(filled.trial_id), "--csv").split(
        "\nWorkloads:\n"
    )
    check_csv(parts[0], TRIAL_DESCRIBE)
    check_csv(parts[1], TRIAL_WORKLOADS)


@pytest.mark.parametrize(
    ("args", "headers", "first"),
    [
        (["user", "list"], USER_LIST, None),
        (["u", "ls"], USER_LIST, None),
        (["model", "list"], MODEL_LIST, "det-output-model"),
        (["m", "ls"], MODEL_LIST, "det-output-model"),
        (["tensorboard", "list"], TENSORBOARD_LIST, None),
        (["template", "list"], TEMPLATE_LIST, "det-output-template"),
        (["tpl", "ls"], TEMPLATE_LIST, "det-output-template"),
    ],
)
def test_other_lists(
    filled: Filled, client: Client, args: list[str], headers: list[str], first: str | None
) -> None:
    rows = check_table(det_out(filled, *args), headers)
    if first is not None:
        assert any(first in row for row in rows)
    if args[0] == "user" or args[0] == "u":
        admin = next(r for r in rows if r[1] == ADMIN)
        user_id = str(client.get_user_by_name(ADMIN).user_id)
        assert admin == [user_id, ADMIN, "N/A", "True", "True", "False", "N/A", "N/A", "N/A", "N/A"]
    check_csv(det_out(filled, *args, "--csv"), headers)


def test_template_details_as_a_grid(filled: Filled) -> None:
    """det's ``template list -d``: render_objects(TemplateAll, ..., table_fmt="grid"), its
    config as YAML. tabulate's grid: +---+ above, +===+ under the header, +---+ between rows
    and below, every line framed by |."""
    text = det_out(filled, "template", "list", "-d")
    lines = text.rstrip("\n").split("\n")
    assert [c.strip() for c in lines[1].strip("|").split("|")] == [*TEMPLATE_LIST, "Config"]
    assert re.fullmatch(r"\+(-+\+){3}", lines[0]) and lines[-1] == lines[0]
    assert lines[2] == lines[0].replace("-", "=")
    assert all(line.startswith(("|", "+")) and line.endswith(("|", "+")) for line in lines)
    assert any("det-output-template" in line and "description: x" in line for line in lines)
    assert grid(["Name", "Workspace"], [["a", "Uncategorized"]]) == (
        "+--------+---------------+\n"
        "| Name   | Workspace     |\n"
        "+========+===============+\n"
        "| a      | Uncategorized |\n"
        "+--------+---------------+"
    )


def test_pedl_keeps_its_own_tables(filled: Filled, master: LiveMaster) -> None:
    shown = subprocess.run(
        [str(DET.with_name("pedl")), "--master", master.url, "experiment", "list"],
        env=filled.env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Experiments" in shown and " | " not in shown.splitlines()[0]


def test_det_json_unchanged(filled: Filled) -> None:
    text = det_out(filled, "e", "list", "--json")
    assert text.lstrip().startswith("[")
