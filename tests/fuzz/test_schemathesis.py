"""Schemathesis over the master's OpenAPI schema, signed in, on SQLite and on PostgreSQL: no
server error, every status code documented, every response matching its schema. Bounded and
seeded (derandomized): a few examples per operation, about a minute per database in CI."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.master.helpers import LiveServer

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES_PER_OPERATION = 5


@pytest.mark.slow
def test_api_conforms_to_its_schema(live_server: LiveServer, client: httpx.Client) -> None:
    schema = schemathesis.openapi.from_url(live_server.url + "/openapi.json")
    headers = {}
    if "Authorization" in client.headers:  # signed in, where the master requires it
        headers["Authorization"] = client.headers["Authorization"]
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 20

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            derandomize=True,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def conforms(case: Any) -> None:
            case.call_and_validate(headers=headers, checks=CHECKS)

        try:
            conforms()
        except Exception as err:
            raise AssertionError(f"{operation.label}: {err}") from err
