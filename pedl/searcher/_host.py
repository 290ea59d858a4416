"""The searcher process: ``python -m pedl.searcher._host`` runs one custom search method for a
:class:`~pedl.searcher.RemoteSearchMethod`, answering its calls over stdin/stdout
(:mod:`pedl.searcher._protocol`).

The protocol keeps the process's original stdin and stdout to itself; the user's code sees
``/dev/null`` as stdin and stderr as stdout, so a ``print`` cannot break the protocol. The
process exits when its stdin closes, or when its parent dies; then it removes the hello's
``workdir`` (the parent's files for it), which a parent killed outright cannot.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import shutil
import sys
import threading
import time
import traceback
import uuid
from pathlib import Path
from typing import IO, Any

from pedl import model_def
from pedl.config import ExperimentConfig
from pedl.searcher._custom import load_search_method
from pedl.searcher._errors import SearcherError
from pedl.searcher._exited_reason import ExitedReason
from pedl.searcher._operations import operation_to_dict
from pedl.searcher._protocol import (
    EVENT_CALLS,
    MAX_MESSAGE_BYTES,
    MAX_OPERATIONS,
    PROTOCOL_VERSION,
    ProtocolError,
    RemoteError,
    decode,
    encode,
)
from pedl.searcher._search_method import SearcherState, SearchMethod

logger = logging.getLogger("pedl.searcher.host")

_PARENT_POLL_SECONDS = 0.5


def main() -> int:
    requests, answers = _protocol_streams()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    workdir: list[Path] = []  # the parent's files for this process, removed if it dies
    _watch_parent(os.getppid(), workdir)
    line = requests.readline(MAX_MESSAGE_BYTES + 1)
    if not line:
        return 0
    code_dir: Path | None = None
    try:
        hello = decode(line)
        if hello.get("workdir"):
            workdir.append(Path(hello["workdir"]))
        if hello.get("protocol") != PROTOCOL_VERSION:
            raise ProtocolError(f"expected protocol {PROTOCOL_VERSION}, got {hello!r:.200}")
        config = ExperimentConfig.model_validate(hello["config"])
        code_dir = Path(hello["code_dir"])
        if hello.get("archive"):
            model_def.extract(Path(hello["archive"]).read_bytes(), code_dir)
        os.chdir(code_dir)
        method = load_search_method(code_dir, config)
    except Exception as e:
        _send(answers, {"error": error_record(e, code_dir).to_dict()})
        return 1
    cls = type(method)
    _send(answers, {"ready": {"class": f"{cls.__module__}.{cls.__qualname__}", "pid": os.getpid()}})
    while True:
        line = requests.readline(MAX_MESSAGE_BYTES + 1)
        if not line:  # the parent closed the pipe, or died
            _remove(workdir)
            return 0
        _send(answers, serve(method, line, code_dir))


def serve(method: SearchMethod, line: bytes, code_dir: Path) -> dict[str, Any]:
    """Answer one request line (an answer whose operations are not JSON data becomes an
    error naming the handler)."""
    ident: Any = None
    call = ""
    try:
        request = decode(line)
        ident = request.get("id")
        call = str(request.get("call"))
        result = _dispatch(method, call, request)
    except _HandlerError as e:
        return {"id": ident, "error": _handler_error(method, call, e.kind, str(e), code_dir)}
    except Exception as e:
        return {"id": ident, "error": error_record(e, code_dir).to_dict()}
    answer = {"id": ident, "result": result}
    try:
        json.dumps(answer)
    except (TypeError, ValueError) as e:
        problem = f"its operations are not JSON data: {e}"
        return {"id": ident, "error": _handler_error(method, call, "TypeError", problem, code_dir)}
    return answer


def _dispatch(method: SearchMethod, call: str, request: dict[str, Any]) -> Any:
    state = SearcherState()
    state.from_dict(request.get("state") or {})
    args = request.get("args") or {}
    if call == "initial_operations":
        ops = method.initial_operations(state)
    elif call == "on_trial_created":
        ops = method.on_trial_created(state, uuid.UUID(args["request_id"]))
    elif call == "on_validation_completed":
        ops = method.on_validation_completed(
            state, uuid.UUID(args["request_id"]), float(args["metric"]), int(args["train_length"])
        )
    elif call == "on_trial_closed":
        ops = method.on_trial_closed(state, uuid.UUID(args["request_id"]))
    elif call == "on_trial_exited_early":
        ops = method.on_trial_exited_early(
            state, uuid.UUID(args["request_id"]), ExitedReason(args["exited_reason"])
        )
    elif call == "progress":
        value = method.progress(state)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _HandlerError("TypeError", f"it returned {value!r:.100}, not a number")
        return float(value)
    elif call == "save":
        method.save(state, Path(args["path"]), experiment_id=int(args.get("experiment_id", 0)))
        return None
    elif call == "load":
        loaded, experiment_id = method.load(Path(args["path"]))
        return {"state": loaded.to_dict(), "experiment_id": experiment_id}
    elif call == "save_method_state":
        method.save_method_state(Path(args["path"]))
        return None
    elif call == "load_method_state":
        method.load_method_state(Path(args["path"]))
        return None
    else:
        raise ProtocolError(f"unknown call {call!r:.100}")
    assert call in EVENT_CALLS
    if not isinstance(ops, list | tuple):
        raise _HandlerError("TypeError", f"it returned {ops!r:.100}, not a list of operations")
    if len(ops) > MAX_OPERATIONS:
        raise _HandlerError(
            "ValueError",
            f"it returned {len(ops)} operations, more than the limit of {MAX_OPERATIONS} per call",
        )
    records = []
    for op in ops:
        try:
            records.append(operation_to_dict(op))
        except SearcherError:
            raise _HandlerError(
                "TypeError",
                f"it returned {op!r:.100}, which is not an operation (Create, ValidateAfter, "
                "Close, Progress, Shutdown)",
            ) from None
    return records


class _HandlerError(Exception):
    """What a handler returned is wrong (reported at the handler's definition, as ``kind``)."""

    def __init__(self, kind: str, problem: str) -> None:
        super().__init__(problem)
        self.kind = kind


def error_record(error: BaseException, code_dir: Path | None) -> RemoteError:
    """Describe ``error`` for the parent: type, message, and where in the model definition it
    was raised (the innermost frame inside ``code_dir``, following ``__cause__``), with the
    path relative to ``code_dir``."""
    where = _location(error, code_dir)
    return RemoteError(
        type=type(error).__name__,
        message=str(error),
        file=where[0] if where else None,
        line=where[1] if where else None,
        function=where[2] if where else None,
        traceback="".join(traceback.format_exception(error)),
    )


def _location(
    error: BaseException, code_dir: Path | None
) -> tuple[str, int | None, str | None] | None:
    if code_dir is None:
        return None
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, SyntaxError) and current.filename:
            relative = _relative(current.filename, code_dir)
            if relative is not None:
                return relative, current.lineno, None
        inside = [
            frame
            for frame in traceback.extract_tb(current.__traceback__)
            if _relative(frame.filename, code_dir) is not None
        ]
        if inside:
            frame = inside[-1]
            return _relative(frame.filename, code_dir) or frame.filename, frame.lineno, frame.name
        current = current.__cause__ or current.__context__
    return None


def _relative(filename: str, code_dir: Path) -> str | None:
    try:
        path = Path(filename).resolve()
        root = code_dir.resolve()
    except (OSError, ValueError):
        return None
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else None


def _handler_error(
    method: SearchMethod, call: str, kind: str, problem: str, code_dir: Path
) -> dict[str, Any]:
    """An error about what ``method.<call>`` returned, located at the handler's definition."""
    cls = type(method)
    handler = getattr(cls, call, None)
    file: str | None = None
    line: int | None = None
    try:
        source = inspect.getsourcefile(handler) if handler is not None else None
        if source is not None:
            file = _relative(source, code_dir) or source
            line = inspect.getsourcelines(handler)[1] if handler is not None else None
    except (OSError, TypeError):
        pass
    return RemoteError(
        type=kind,
        message=f"{cls.__qualname__}.{call}: {problem}",
        file=file,
        line=line,
        function=call,
    ).to_dict()


def _protocol_streams() -> tuple[IO[bytes], IO[bytes]]:
    """Keep stdin and stdout for the protocol; give user code /dev/null and stderr."""
    requests = os.fdopen(os.dup(0), "rb")
    answers = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout.flush()
    os.dup2(2, 1)
    return requests, answers


def _send(answers: IO[bytes], message: dict[str, Any]) -> None:
    answers.write(encode(message))
    answers.flush()


def _watch_parent(parent: int, workdir: list[Path]) -> None:
    """Exit at once when the parent process is gone (even while user code runs), removing
    the files it made for this process."""

    def watch() -> None:
        while True:
            time.sleep(_PARENT_POLL_SECONDS)
            if os.getppid() != parent:
                _remove(workdir)
                os._exit(3)

    threading.Thread(target=watch, name="pedl-searcher-parent-watch", daemon=True).start()


def _remove(workdir: list[Path]) -> None:
    for path in workdir:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
