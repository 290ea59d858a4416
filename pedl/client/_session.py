"""The HTTP session with the master: base URL, timeouts, and errors as :class:`PEDLError`."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from pedl.client._errors import ErrorIssue, MasterUnreachableError, NotFoundError, PEDLError

DEFAULT_MASTER = "http://127.0.0.1:8080"
"""The master used when neither an address nor ``PEDL_MASTER`` is given."""

MASTER_ENV = "PEDL_MASTER"
"""The environment variable naming the master's address."""

API_PREFIX = "/api/v1"

Params = Mapping[str, Any]


def master_url(master: str | None = None) -> str:
    """The master's base URL: ``master``, else ``$PEDL_MASTER``, else :data:`DEFAULT_MASTER`.

    ``host:port`` without a scheme means ``http://host:port``; a trailing ``/`` is dropped.
    """
    address = (master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER).strip()
    if "://" not in address:
        address = "http://" + address
    return address.rstrip("/")


class Session:
    """A connection to one master's REST API (``<master>/api/v1``).

    Every method raises :class:`PEDLError` on failure: :class:`MasterUnreachableError` when
    the master cannot be reached, :class:`NotFoundError` for a 404, a plain :class:`PEDLError`
    carrying the API's ``message``, ``field`` and ``issues`` for any other error status.
    Safe to share between threads (httpx clients are). Close it (or use ``with``) when done.
    """

    def __init__(
        self,
        master: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.master = master_url(master)
        self._http = httpx.Client(
            base_url=self.master + API_PREFIX, timeout=timeout, transport=transport
        )

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def get(self, path: str, *, params: Params | None = None) -> Any:
        """``GET path`` and return the decoded JSON body."""
        return self._request("GET", path, params=params)

    def post(self, path: str, *, json: Any = None) -> Any:
        """``POST path`` with a JSON body and return the decoded JSON body (``None`` if empty)."""
        return self._request("POST", path, json=json)

    def get_all(
        self, path: str, *, params: Params | None = None, page_size: int = 1000
    ) -> list[Any]:
        """Every item of a paged listing (``{"items", "total", "offset", "limit"}``), in order."""
        items: list[Any] = []
        while True:
            query = {**(params or {}), "offset": len(items), "limit": page_size}
            page = self.get(path, params=query)
            batch = page["items"]
            items.extend(batch)
            if not batch or len(items) >= int(page["total"]):
                return items

    @contextmanager
    def stream(self, path: str) -> Iterator[httpx.Response]:
        """``GET path`` as a streamed response (status already checked)."""
        try:
            with self._http.stream("GET", path) as response:
                if response.is_error:
                    response.read()
                    raise _error_from(response)
                yield response
        except httpx.TransportError as err:
            raise self._transport_error(err) from err

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as err:
            raise self._transport_error(err) from err
        if response.is_error:
            raise _error_from(response)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError as err:
            raise PEDLError(
                f"the master at {self.master} answered {method} {path} with a body that is "
                "not JSON (is this a PEDL master?)",
                status_code=response.status_code,
            ) from err

    def _transport_error(self, err: httpx.TransportError) -> PEDLError:
        if isinstance(err, httpx.ConnectError | httpx.ConnectTimeout | httpx.UnsupportedProtocol):
            return MasterUnreachableError(
                f"cannot reach the PEDL master at {self.master} ({err}); start one with "
                f"'pedl master' or point --master / {MASTER_ENV} at it"
            )
        return PEDLError(f"request to the PEDL master at {self.master} failed: {err!r}")


def _error_from(response: httpx.Response) -> PEDLError:
    """Turn an error response (the API's ``{"error": {...}}`` shape, or anything) into an error."""
    message = f"HTTP {response.status_code} {response.reason_phrase}".strip()
    field: str | None = None
    issues: list[ErrorIssue] = []
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        message = str(error.get("message") or message)
        field = error.get("field") if isinstance(error.get("field"), str) else None
        for issue in error.get("issues") or ():
            if isinstance(issue, dict):
                line = issue.get("line")
                issues.append(
                    ErrorIssue(
                        field=issue.get("field"),
                        message=str(issue.get("message", "")),
                        line=line if isinstance(line, int) else None,
                    )
                )
    elif response.text:
        message = f"{message}: {response.text[:500]}"
    cls = NotFoundError if response.status_code == 404 else PEDLError
    return cls(message, status_code=response.status_code, field=field, issues=issues)
