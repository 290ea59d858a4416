"""Schemathesis over the master's OpenAPI schema, signed in and signed out, on SQLite and on
PostgreSQL: no server error, every status code documented (401s included), every response
matching its schema. Bounded and seeded (derandomized): a few examples per operation, well
under a minute per database in CI. Each request waits for its answer as long as the suite's
other waits on a loaded machine (:func:`~tests.waits.scaled`); one that still gets none fails
with the test master's threads and event-loop tasks, to show where it was stuck."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.diagnostics import event_loop_tasks, thread_stacks
from tests.master.helpers import LiveServer
from tests.waits import scaled

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.mark.slow
@pytest.mark.parametrize(("signed_in", "examples"), [(True, 4), (False, 2)], ids=["in", "out"])
def test_api_conforms_to_its_schema(
    live_server: LiveServer, client: httpx.Client, signed_in: bool, examples: int
) -> None:
    schema = schemathesis.openapi.from_url(live_server.url + "/openapi.json")
    headers = {}
    if signed_in and "Authorization" in client.headers:  # where the master requires it
        headers["Authorization"] = client.headers["Authorization"]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 20

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=examples,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def conforms(case: Any) -> None:
            try:
                case.call_and_validate(headers=headers, checks=CHECKS, timeout=scaled(30))
            except requests.Timeout as err:
                stuck = f"{thread_stacks()}\n{event_loop_tasks()}"
                raise AssertionError(f"no answer in time: {err}\n{stuck}") from err

        try:
            conforms()
        except Exception as err:
            raise AssertionError(f"{operation.label}: {err}") from err
