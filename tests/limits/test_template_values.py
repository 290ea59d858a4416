"""A template is held to the values an experiment config may hold, on SQLite and PostgreSQL:
a NaN or infinite number (``NaN``, ``Infinity``, ``-Infinity``, ``1e309``, which JSON parsers
read as infinity) is refused with 422 naming its field, as in every other JSON document. It
once answered 500 on PostgreSQL (psycopg: ``Token "NaN" is invalid``) and was stored as
``null`` on SQLite (200)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from .conftest import Master

pytestmark = pytest.mark.slow  # a master process per database

NON_FINITE = ["NaN", "Infinity", "-Infinity", "1e309", "-1e400"]


def _put_raw(master: Master, name: str, body: str) -> httpx.Response:
    return master.http.put(
        f"/templates/{name}", content=body, headers={"Content-Type": "application/json"}
    )


def _refused(response: httpx.Response, field: str, *fragments: str) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["field"] == field, error
    for fragment in fragments:
        assert fragment in error["message"], error
    return error


@pytest.mark.parametrize("literal", NON_FINITE)
def test_a_non_finite_number_is_refused_naming_its_field(master: Master, literal: str) -> None:
    name = f"non-finite-{NON_FINITE.index(literal)}"
    body = '{"config": {"hyperparameters": {"lr": 0.1, "momentum": ' + literal + "}}}"
    _refused(_put_raw(master, name, body), "config.hyperparameters.momentum", "finite")
    assert master.http.get(f"/templates/{name}").status_code == 404  # nothing stored
    in_a_list = '{"config": {"data": {"points": [1, ' + literal + "]}}}"
    _refused(_put_raw(master, name, in_a_list), "config.data.points[1]", "finite")

    # A stored template is not replaced by one that is refused.
    assert master.http.put(f"/templates/{name}", json={"config": {"x": 1.5}}).status_code == 200
    _refused(_put_raw(master, name, body), "config.hyperparameters.momentum", "finite")
    assert master.http.get(f"/templates/{name}").json()["config"] == {"x": 1.5}
    master.assert_well()


def test_the_other_values_no_config_may_hold_are_refused_too(master: Master) -> None:
    too_big = '{"config": {"max_restarts": ' + "9" * 400 + "}}"
    _refused(_put_raw(master, "values", too_big), "config.max_restarts", "400 digits")
    nul = json.dumps({"config": {"description": "a\u0000b"}})
    _refused(_put_raw(master, "values", nul), "config.description", "NUL")
    finite = {"hyperparameters": {"lr": 1e308, "n": 2**63 - 1, "m": -(2**63)}}
    stored = master.http.put("/templates/values", json={"config": finite})
    assert stored.status_code == 200, stored.text
    assert master.http.get("/templates/values").json()["config"] == finite
    master.assert_well()
