"""Big metric reports checked by a read process.

The master's event loop and its metric writer share one GIL. pydantic validates a report's
body in one call that holds it (~1 ms per 1,000 rows on a fast core, more than 2 on a slow
one); the writer, which runs SQL without the GIL, waits for it between statements. With
reports of 1,000 rows arriving back to back on SQLite, the writer's transactions took about
1.5 times as long in the master as alone (bench/RESULTS.md, "P5a"). So a body of
:data:`REMOTE_CHECK_BYTES` or more goes to one of the master's read processes first
(:class:`ReportChecks`, over the connections reads are forwarded on,
:mod:`pedl.master.api._forward`). There :class:`ReportCheckServer` validates it with the
API's schema (:func:`~pedl.master.api.trials.fast_metric_rows`), checks that the database
may store its text (:func:`pedl.db.check_report`), and answers (JSON) what the metric writer
needs of its rows: how many, their distinct keys, the largest batch count, the training
rows' largest and the validation rows' batch counts. The master then hands the text to the
writer (:meth:`pedl.db.MetricIngestor.submit_checked_async`) without parsing it.

On both databases. On PostgreSQL too (since 2026-12-04) the event loop, which validated and
checked each big report itself (~3.5 ms a 1,000-row report on 2 vCPUs), was what P5a's four
reporters waited on while the machine was a quarter idle; with the read process checking them,
the master stores ~12% more rows a second there (bench/RESULTS.md, "P5a, 2026-12-04").

Anything else is the master's own work, exactly as without read processes: a body the schema
or the text check refuses (the read process answers ``null``, and the route's errors name the
field), no read process, or none answering within :data:`CHECK_TIMEOUT_S`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import overload

from starlette.types import ASGIApp, Receive, Scope, Send

from pedl.db import CheckedReport, check_report
from pedl.db.metrics import MetricReport, ReportText
from pedl.master.api import trials
from pedl.master.api._forward import Forwarding, ReadSource, forward
from pedl.master.api._limits import read_body

CHECK_PATH = "/_pedl/check-report"
"""Where a read process checks a report (it serves nothing else that is not a read; the master
never serves this path)."""

REMOTE_CHECK_BYTES = 32 * 1024
"""Bodies this long or longer (~300 rows of two metrics) are checked by a read process: their
validation holds the GIL for longer than the hop costs the master."""

CHECK_TIMEOUT_S = 5.0
"""How long the master waits for a read process to check a report before checking it itself."""

_JSON = (b"content-type", b"application/json")


class _BodyRows(Sequence[MetricReport]):
    """The ``count`` rows of a checked report, made from its body (by the API's schema) only
    when an item is read: the writer reads them only to name a refused row, or to store the
    report as rows when its batch failed."""

    def __init__(self, body: bytes, count: int) -> None:
        self._body = body
        self._count = count
        self._rows: list[MetricReport] | None = None

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> MetricReport: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[MetricReport]: ...

    def __getitem__(self, index: int | slice) -> MetricReport | Sequence[MetricReport]:
        return self._made()[index]

    def __iter__(self) -> Iterator[MetricReport]:
        return iter(self._made())

    def _made(self) -> list[MetricReport]:
        if self._rows is None:
            rows = trials.fast_metric_rows(self._body)
            if rows is None or len(rows) != self._count:
                raise RuntimeError("a report checked by a read process does not parse here")
            self._rows = rows
        return self._rows


def checked_answer(body: bytes, dialect: str) -> bytes | None:
    """A read process's answer for ``body`` (JSON), or ``None`` when the master must check it
    itself (the schema or the text check refuses it)."""
    rows = trials.fast_metric_rows(body)
    if rows is None:
        return None
    checked = check_report(body, rows, dialect)
    if checked is None:
        return None
    text = checked.text
    summary = {
        "rows": len(rows),
        "keys": checked.distinct_keys,
        "most": checked.most_batches,
        "top": text.top,
        "validated": sorted(text.validated),
    }
    return json.dumps(summary, separators=(",", ":")).encode()


def checked_report(body: bytes, answer: bytes, dialect: str) -> CheckedReport:
    """The :class:`~pedl.db.CheckedReport` of ``body`` from a read process's ``answer``
    (:func:`checked_answer`)."""
    summary = json.loads(answer)
    text = ReportText(
        body.decode(),
        _BodyRows(body, summary["rows"]),
        summary["top"],
        frozenset(summary["validated"]),
        dialect,
    )
    return CheckedReport(text, summary["keys"], summary["most"])


class ReportCheckServer:
    """ASGI middleware of a read process's app: ``POST`` :data:`CHECK_PATH` answered with
    :func:`checked_answer`, or ``null`` when the master must check the body itself;
    everything else goes to ``app``."""

    def __init__(self, app: ASGIApp, *, dialect: str) -> None:
        self.app = app
        self.dialect = dialect

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != CHECK_PATH:
            await self.app(scope, receive, send)
            return
        answer = checked_answer(await read_body(receive), self.dialect) or b"null"
        headers = [(b"content-length", b"%d" % len(answer)), _JSON]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})


class ReportChecks:
    """The master's side: :meth:`check` has a read process from ``source`` (round robin, as
    reads are forwarded) check a body, on the connections of ``forwarding``."""

    def __init__(self, source: ReadSource, forwarding: Forwarding, *, dialect: str) -> None:
        self.source = source
        self.forwarding = forwarding
        self.dialect = dialect

    async def check(self, body: bytes) -> CheckedReport | None:
        """``body`` checked by a read process, or ``None``: none answered in time, or the
        master must check it itself (see the module)."""
        path = self.forwarding.pick(self.source.sockets())
        if path is None:
            return None
        head = b"POST %s HTTP/1.1\r\nhost: pedl-master\r\n%s: %s\r\ncontent-length: %d\r\n\r\n"
        request = head % (CHECK_PATH.encode(), *_JSON, len(body)) + body
        answer = await forward(self.forwarding, path, request, CHECK_TIMEOUT_S)
        if answer is None or answer.status != 200 or answer.body == b"null":
            return None
        self.forwarding.reports_checked += 1
        return checked_report(body, answer.body, self.dialect)
