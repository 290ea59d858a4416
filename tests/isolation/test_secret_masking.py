"""The one masking helper: which names look secret, and what an experiment's config shows."""

from __future__ import annotations

import copy
import string
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pedl.config._secrets import MASK, is_secret_name, mask_config, mask_url, mask_variable

SECRET = [
    "PASSWORD",
    "pgpassword",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "WANDB_API_KEY",
    "HF_TOKEN",
    "GITHUB_AUTH",
    "DET_PASS",
    "MY_PASSWD",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "Db_Pwd",
]
NOT_SECRET = ["PATH", "HOME", "PWD", "OLDPWD", "CUDA_VISIBLE_DEVICES", "AUTHOR", "PASSAGE"]


@pytest.mark.parametrize("name", SECRET)
def test_secret_looking_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", NOT_SECRET)
def test_other_names(name: str) -> None:
    assert not is_secret_name(name)


def test_url_passwords_are_masked_wherever_they_are() -> None:
    text = "db postgresql+psycopg://postgres:hunter2@127.0.0.1:5432/x, http://h:80/a:b@c"
    assert mask_url(text) == f"db postgresql+psycopg://postgres:{MASK}@127.0.0.1:5432/x, " + (
        "http://h:80/a:b@c"
    )
    assert mask_variable("DATABASE_URL=mysql://u:p@h/d") == f"DATABASE_URL=mysql://u:{MASK}@h/d"
    assert mask_variable("API_KEY=") == "API_KEY="  # nothing to hide


def config(variables: Any) -> dict[str, Any]:
    return {
        "name": "x",
        "hyperparameters": {"key_dim": 3, "token_count": 5},
        "environment": {"environment_variables": variables, "image": "i"},
        "checkpoint_storage": {"type": "s3", "bucket": "b", "secret_key": "s3cr3t"},
    }


def test_both_forms_of_environment_variables_and_storage_secrets_are_masked() -> None:
    listed = config(["A=1", "AWS_SECRET_ACCESS_KEY=abc", "TOKEN=t"])
    per_device = config({"cpu": ["HF_TOKEN=h", "B=2"], "gpu": ["PGPASSWORD=p"]})
    before = copy.deepcopy([listed, per_device])
    shown = mask_config(listed)
    assert shown["environment"] == {
        "environment_variables": ["A=1", f"AWS_SECRET_ACCESS_KEY={MASK}", f"TOKEN={MASK}"],
        "image": "i",
    }
    assert shown["checkpoint_storage"] == {"type": "s3", "bucket": "b", "secret_key": MASK}
    assert shown["hyperparameters"] == listed["hyperparameters"]  # only the two sections
    assert mask_config(per_device)["environment"]["environment_variables"] == {
        "cpu": [f"HF_TOKEN={MASK}", "B=2"],
        "gpu": [f"PGPASSWORD={MASK}"],
    }
    assert [listed, per_device] == before  # the stored config keeps the real values
    assert mask_config({"name": "no environment"}) == {"name": "no environment"}


NAME = st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=30)
VALUE = st.text(st.characters(exclude_characters="\x00"), min_size=1, max_size=40)


@given(st.lists(st.tuples(NAME, VALUE), max_size=8))
def test_a_masked_entry_shows_no_secret_value_and_others_stay(
    entries: list[tuple[str, str]],
) -> None:
    variables = [f"{name}={value}" for name, value in entries]
    shown = mask_config(config(variables))["environment"]["environment_variables"]
    assert len(shown) == len(variables)
    for (name, value), entry in zip(entries, shown, strict=True):
        if is_secret_name(name):
            assert entry == f"{name}={MASK}"
        elif "://" not in value:
            assert entry == f"{name}={value}"
