"""``pedl tensorboard start``'s arguments, Determined's form (experiment ids, then ``-t`` and
trial ids): refused before any request when they name nothing or are not ids. (Starting one
on a real master: tests/master/test_tensorboard_e2e.py.)"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pedl.cli import cli
from pedl.cli._tensorboard import _ids


def test_ids_in_determineds_form() -> None:
    assert _ids(("3", "4")) == ([3, 4], [])
    assert _ids(("3", "-t", "7", "8")) == ([3], [7, 8])
    assert _ids(("--trial-ids", "7")) == ([], [7])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "name experiment ids, or trial ids after --trial-ids"),
        (["x"], "'x' is not an experiment id"),
        (["1", "-t", "0"], "'0' is not a trial id"),
    ],
)
def test_bad_arguments_are_refused(args: list[str], message: str) -> None:
    result = CliRunner().invoke(
        cli, ["--master", "http://127.0.0.1:9", "tensorboard", "start", *args]
    )
    assert result.exit_code == 2, result.output
    assert message in result.output
