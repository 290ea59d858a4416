"""The HTTP session with the master: base URL, timeouts, signing in, and errors as
:class:`PEDLError`."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from pedl.client._address import MASTER_ENV, master_url
from pedl.client._errors import (
    ErrorIssue,
    MasterUnreachableError,
    NotFoundError,
    NotSignedInError,
    PEDLError,
)
from pedl.client._tokens import PASSWORD_ENV, USER_ENV, SavedToken, TokenStore, env_credentials

API_PREFIX = "/api/v1"

Params = Mapping[str, Any]


class Session:
    """A connection to one master's REST API (``<master>/api/v1``), signed in as a user.

    Signing in, at the first request: with ``token``, that session token; else, when
    ``PEDL_USER`` and ``PEDL_PASSWORD`` (or Determined's ``DET_USER`` and ``DET_PASS``)
    are set, as that user (re-using the token saved for
    this master if it is that user's, else signing in and saving the new token); else with
    the token saved for this master by ``pedl user login`` (:class:`TokenStore`), if any. A
    401 answer to a saved token, when the password is known, signs in again once.

    Every method raises :class:`PEDLError` on failure: :class:`MasterUnreachableError` when
    the master cannot be reached, :class:`NotSignedInError` for a 401 (saying how to sign
    in), :class:`NotFoundError` for a 404, a plain :class:`PEDLError` carrying the API's
    ``message``, ``field`` and ``issues`` for any other error status. Safe to share between
    threads (httpx clients are). Close it (or use ``with``) when done.
    """

    def __init__(
        self,
        master: str | None = None,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        token: str | None = None,
        tokens: TokenStore | None = None,
    ) -> None:
        self.master = master_url(master)
        self.tokens = tokens if tokens is not None else TokenStore()
        self._http = httpx.Client(
            base_url=self.master + API_PREFIX, timeout=timeout, transport=transport
        )
        self._token = token
        self._resolved = token is not None
        self._auth_lock = threading.Lock()

    def login(self, username: str, password: str) -> dict[str, Any]:
        """Sign in as ``username`` and save the new token for this master; the master's
        answer (``token``, ``username``, ``admin``, ``expires_at``)."""
        answer = self._send(
            "POST", "/auth/login", None, json={"username": username, "password": password}
        )
        assert isinstance(answer, dict)
        self.tokens.put(self.master, SavedToken(str(answer["username"]), str(answer["token"])))
        with self._auth_lock:
            self._token = str(answer["token"])
            self._resolved = True
        return answer

    def logout(self) -> None:
        """End the session on the master (if signed in) and forget its saved token."""
        token = self._current_token()
        try:
            if token is not None:
                self._send("POST", "/auth/logout", token)
        except NotSignedInError:
            pass  # already expired or revoked
        finally:
            saved = self.tokens.get(self.master)
            if saved is not None and saved.token == token:
                self.tokens.remove(self.master)
            with self._auth_lock:
                self._token = None
                self._resolved = True

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

    def patch(self, path: str, *, json: Any = None) -> Any:
        """``PATCH path`` with a JSON body and return the decoded JSON body."""
        return self._request("PATCH", path, json=json)

    def put(self, path: str, *, json: Any = None) -> Any:
        """``PUT path`` with a JSON body and return the decoded JSON body."""
        return self._request("PUT", path, json=json)

    def delete(self, path: str, *, params: Params | None = None) -> Any:
        """``DELETE path``; the decoded JSON body (``None`` if empty)."""
        return self._request("DELETE", path, params=params)

    def get_bytes(self, path: str) -> bytes:
        """``GET path`` and return the body as bytes (an archive, a file)."""
        with self.stream(path) as response:
            return response.read()

    def post_form(
        self,
        path: str,
        *,
        fields: Mapping[str, str],
        files: Mapping[str, tuple[str, bytes, str]],
        timeout: float | None = None,
    ) -> Any:
        """``POST path`` as ``multipart/form-data``: ``fields`` as text fields, ``files`` as
        file parts (``(filename, content, content type)``); the decoded JSON answer.
        ``timeout``: seconds to wait for it (default the session's)."""
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        return self._request("POST", path, data=dict(fields), files=dict(files), **extra)

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
        token = self._current_token()
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        try:
            with self._http.stream("GET", path, headers=headers) as response:
                if response.is_error:
                    response.read()
                    raise _error_from(response, self.master)
                yield response
        except httpx.TransportError as err:
            raise self._transport_error(err) from err

    def _current_token(self) -> str | None:
        """The token to send: resolved once (see the class's docstring)."""
        with self._auth_lock:
            if self._resolved:
                return self._token
        user, password = env_credentials()
        saved = self.tokens.get(self.master)
        token = saved.token if saved is not None else None
        if user and password and (saved is None or saved.username != user):
            token = str(self.login(user, password)["token"])
        with self._auth_lock:
            self._token, self._resolved = token, True
            return token

    def _request(self, method: str, path: str, **kwargs: Any) -> Any:
        token = self._current_token()
        try:
            return self._send(method, path, token, **kwargs)
        except NotSignedInError:
            user, password = env_credentials()
            if not (user and password and token is not None):
                raise
        # The saved token expired or was revoked: sign in again, once.
        token = str(self.login(user, password)["token"])
        return self._send(method, path, token, **kwargs)

    def _send(self, method: str, path: str, token: str | None, **kwargs: Any) -> Any:
        headers = {} if token is None else {"Authorization": f"Bearer {token}"}
        try:
            response = self._http.request(method, path, headers=headers, **kwargs)
        except httpx.TransportError as err:
            raise self._transport_error(err) from err
        if response.is_error:
            raise _error_from(response, self.master)
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


def _error_from(response: httpx.Response, master: str) -> PEDLError:
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
    if response.status_code == 401:
        hint = f"sign in with `pedl user login`, or set {USER_ENV} and {PASSWORD_ENV}"
        if "pedl user login" not in message:
            message = f"{message}; {hint}"
        return NotSignedInError(
            f"the PEDL master at {master} answered 401: {message}", status_code=401, field=field
        )
    cls = NotFoundError if response.status_code == 404 else PEDLError
    return cls(message, status_code=response.status_code, field=field, issues=issues)
