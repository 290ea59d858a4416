"""The trial's HTTP line to the master: its bearer token, retries, and giving up."""

from __future__ import annotations

import functools
import os
import random
import ssl
import time
from collections.abc import Mapping
from typing import Any

import httpx

API_PREFIX = "/api/v1"
DEFAULT_GIVE_UP_S = 300.0
"""How long a trial keeps retrying one request (``PEDL_MASTER_GIVE_UP_SECONDS``)."""
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_BACKOFF_FIRST_S = 0.1
_BACKOFF_CAP_S = 5.0
_RETRY_AFTER_CAP_S = 60.0
_JITTER = random.Random()
"""The backoff's own generator: drawing from the global one would move the trial's Python
random state, which its checkpoints save, by however many retries the load caused."""


class MasterError(RuntimeError):
    """The master refused a request (4xx), or could not be reached for too long."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class MasterClient:
    """Requests of one trial to the master's REST API, authenticated by the trial's token.

    Connection errors, timeouts, 5xx and 429 answers are retried until the request has
    failed for ``give_up_after`` seconds (default 300, ``PEDL_MASTER_GIVE_UP_SECONDS``), then
    :class:`MasterError` is raised (a trial whose master is gone stops instead of training
    for nobody). Between tries it waits a capped exponential backoff with jitter (0.1 s
    doubling to 5 s, each wait drawn between half and all of it), or at least the
    ``Retry-After`` of a 503/429 answer (capped at 60 s) plus up to a quarter more, never past
    its patience. Retried POSTs are safe: the master stores metrics, logs and checkpoints
    idempotently (same key, same row). A 4xx answer raises at once (401: the token was revoked
    because another process of this trial was started). Thread-safe (httpx clients are).

    :attr:`unreachable` says whether the latest request to finish a try could not reach the
    master (a transport error, or a 5xx or 429 answer): the trial's other requests use it to
    answer from what they know instead of waiting (see :class:`pedl.exec.RestBackend`).
    """

    def __init__(
        self,
        master_url: str,
        trial_id: int,
        token: str,
        *,
        give_up_after: float = DEFAULT_GIVE_UP_S,
        timeout: float = 30.0,
    ) -> None:
        self.master_url = master_url.rstrip("/")
        self.trial_id = trial_id
        self._give_up_after = give_up_after
        self.unreachable = False
        self._http = httpx.Client(
            base_url=self.master_url + API_PREFIX,
            headers={"Authorization": f"Bearer {token}"},
            timeout=timeout,
            verify=_tls_context(),
        )

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, token: str | None = None
    ) -> MasterClient:
        """Build from ``PEDL_MASTER_URL``, ``PEDL_TRIAL_ID`` (and the optional
        ``PEDL_MASTER_GIVE_UP_SECONDS``), as the resource manager sets them, with the trial's
        ``token``. The resource manager passes the token outside the environment (the trial
        process reads it first); without ``token``, ``PEDL_TRIAL_TOKEN`` is used (a trial
        process started by hand)."""
        env = os.environ if environ is None else environ
        wanted = ["PEDL_MASTER_URL", "PEDL_TRIAL_ID"] + ([] if token else ["PEDL_TRIAL_TOKEN"])
        missing = [name for name in wanted if not env.get(name)]
        if missing:
            raise MasterError(f"not started by a PEDL master: {', '.join(missing)} not set")
        return cls(
            env["PEDL_MASTER_URL"],
            int(env["PEDL_TRIAL_ID"]),
            token or env["PEDL_TRIAL_TOKEN"],
            give_up_after=float(env.get("PEDL_MASTER_GIVE_UP_SECONDS") or str(DEFAULT_GIVE_UP_S)),
        )

    @property
    def trial_path(self) -> str:
        """The path of this trial's resource, ``/trials/<id>``."""
        return f"/trials/{self.trial_id}"

    def get(
        self,
        path: str,
        params: Mapping[str, Any] | None = None,
        *,
        give_up_after: float | None = None,
        timeout: float | None = None,
    ) -> Any:
        """GET ``path`` (under ``/api/v1``) and return the decoded JSON body. ``give_up_after``
        (default: the client's patience; 0: one try) and ``timeout`` (default: the client's)
        are this request's own."""
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        return self._request(
            "GET", path, give_up_after=give_up_after, params=params, **extra
        ).json()

    def get_bytes(self, path: str) -> bytes:
        """GET ``path`` and return the raw body."""
        return self._request("GET", path).content

    def post(self, path: str, body: Any, *, give_up_after: float | None = None) -> Any:
        """POST a JSON body to ``path`` and return the decoded JSON body (None if empty);
        ``give_up_after`` as for :meth:`get`."""
        response = self._request("POST", path, give_up_after=give_up_after, json=body)
        return response.json() if response.content else None

    def close(self) -> None:
        self._http.close()

    def _request(
        self, method: str, path: str, *, give_up_after: float | None = None, **kwargs: Any
    ) -> httpx.Response:
        patience = self._give_up_after if give_up_after is None else give_up_after
        first_failure: float | None = None
        backoff = _BACKOFF_FIRST_S
        while True:
            retry_after: float | None = None
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as err:
                problem = f"{type(err).__name__}: {err}"
            else:
                self.unreachable = response.status_code in _RETRY_STATUS
                if response.status_code < 400:
                    return response
                if response.status_code not in _RETRY_STATUS:
                    raise MasterError(
                        f"{method} {path}: {response.status_code} {_error_text(response)}",
                        status=response.status_code,
                    )
                problem = f"{response.status_code} {_error_text(response)}"
                if response.status_code in (429, 503):
                    retry_after = _retry_after(response)
            self.unreachable = True
            now = time.monotonic()
            first_failure = now if first_failure is None else first_failure
            left = patience - (now - first_failure)
            if left <= 0:
                raise MasterError(
                    f"{method} {path}: the master at {self.master_url} has not answered for "
                    f"{patience:.0f} s (last problem: {problem})"
                )
            delay = _JITTER.uniform(backoff / 2, backoff)
            if retry_after is not None:
                delay = max(delay, retry_after * _JITTER.uniform(1.0, 1.25))
            time.sleep(min(delay, left))
            backoff = min(backoff * 2, _BACKOFF_CAP_S)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, made once per process: making one loads the CA
    certificates (tens of ms), and a warm worker makes a client per trial."""
    return httpx.create_ssl_context()


def _retry_after(response: httpx.Response) -> float | None:
    """The ``Retry-After`` seconds of an answer (capped), ``None`` if absent or a date."""
    value = response.headers.get("Retry-After", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return min(max(seconds, 0.0), _RETRY_AFTER_CAP_S)


def _error_text(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500]
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"].get("message", body))
    return str(body)[:500]
