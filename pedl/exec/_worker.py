"""A warm worker: a process that has imported PEDL and the framework (TensorFlow, Keras) but no
user code, and runs the trials its resource manager hands it, one at a time.

It saves the framework's import (seconds) on every trial after its first. The resource manager
starts it for a trial and, when that trial ended normally, may give it the next trial of the
same experiment (started with the same environment, so everything read from the environment
at import time is as in a fresh process).

Protocol, over a ``socketpair(AF_UNIX, SOCK_SEQPACKET)`` whose worker end is the file
descriptor given on the command line (``python -m pedl.exec.worker FD``); one JSON object per
message:

- the resource manager sends ``{"trial_id": N, "token": "...", "env": {...}}`` (the trial's
  token, and its own variables: ``PEDL_TRIAL_ID``, ``TMPDIR``) with two file descriptors, the
  write ends of the trial's stdout and stderr pipes;
- the worker points its file descriptors 1 and 2 at them, sets the variables, runs the trial
  exactly as a trial process does (:func:`~pedl.exec.serve_trial`, with the token, which is
  never put in the environment), cleans up, and points 1 and 2 back at its own output, so
  that the trial's pipes end (EOF) when the trial is over;
- if the process is fit for another trial it answers ``{"trial_id": N, "returncode": 0}``
  and waits for the next; otherwise it exits with the trial's exit status, as a trial process
  would. An empty message or a closed socket retires it (exit 0).

Fit for another trial (:func:`clean_up` says why not, in the trial's log): the trial exited
with :data:`~pedl.exec.EXIT_OK` (completed, stopped early, invalid hyperparameters, preempted;
not errored, not killed, not cut off from the master); and after the clean-up nothing of it is
left that a fresh process would not have: no child processes, no threads it started, the
framework's process-wide settings (:func:`framework_settings`) as they were. The clean-up
unloads the model definition's modules and its ``sys.path`` entry (:func:`pedl.model_def.unload`;
modules installed elsewhere stay imported, as in local mode), restores the environment
variables (and :mod:`tempfile`'s directory), the working directory, ``sys.path``,
``sys.stdout``/``sys.stderr``, the root logger's handlers and the warning filters, clears
Keras' session, and forgets what TensorFlow registered for the trial's functions (custom
gradients, retracing counts). Each trial then seeds every generator and resets Keras' names
itself (as in a fresh process), so its weights are bit for bit
those of the same trial in a fresh process.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import inspect
import json
import logging
import multiprocessing
import os
import socket
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

from pedl import model_def
from pedl.exec._exit_codes import EXIT_ERROR, EXIT_OK
from pedl.exec._private import make_undumpable
from pedl.exec._trial_process import configure_logging, die_with_master, serve_trial

PRELOAD = ("pedl.keras", "pedl.estimator")
"""Imported when the worker starts (each only where it imports: ``pedl.keras`` needs Keras 3,
``pedl.estimator`` TensorFlow 2.15's ``tf.estimator``): the framework and PEDL's layer over
it."""

MAX_MESSAGE = 1 << 20
_THREAD_GRACE_SECONDS = 0.5


def framework_settings() -> dict[str, Any]:
    """The process-wide settings of the imported frameworks that a trial can change and that
    change its results: Keras' float type, epsilon, image data format and dtype policy;
    TensorFlow's eager functions, JIT, graph optimizer options and TF32; NumPy's error
    handling. Frameworks that are not imported are not imported for this."""
    settings: dict[str, Any] = {}
    np: Any = sys.modules.get("numpy")
    if np is not None:
        settings["numpy.geterr"] = np.geterr()
    keras: Any = sys.modules.get("keras")
    if keras is not None and hasattr(keras, "config"):
        settings["keras.floatx"] = keras.config.floatx()
        settings["keras.epsilon"] = keras.config.epsilon()
        settings["keras.image_data_format"] = keras.config.image_data_format()
        settings["keras.dtype_policy"] = keras.config.dtype_policy().name
    tf: Any = sys.modules.get("tensorflow")
    if tf is not None and hasattr(tf, "config"):
        settings["tf.functions_run_eagerly"] = tf.config.functions_run_eagerly()
        settings["tf.jit"] = tf.config.optimizer.get_jit()
        settings["tf.optimizer"] = tf.config.optimizer.get_experimental_options()
        settings["tf.tensor_float_32"] = tf.config.experimental.tensor_float_32_execution_enabled()
    return settings


@dataclass(frozen=True)
class ProcessState:
    """What a trial may change in its process and a fresh process would have as the worker
    had it before its first trial."""

    environ: dict[str, str]
    tempdir: str | None
    cwd: str
    path: list[str]
    stdout: TextIO
    stderr: TextIO
    root_handlers: list[logging.Handler]
    root_level: int
    warning_filters: list[Any]
    threads: frozenset[threading.Thread]
    settings: dict[str, Any]
    custom_gradients: frozenset[str]

    @classmethod
    def take(cls) -> ProcessState:
        root = logging.getLogger()
        return cls(
            environ=dict(os.environ),
            tempdir=tempfile.tempdir,
            cwd=os.getcwd(),
            path=list(sys.path),
            stdout=sys.stdout,
            stderr=sys.stderr,
            root_handlers=list(root.handlers),
            root_level=root.level,
            warning_filters=list(warnings.filters),
            threads=frozenset(threading.enumerate()),
            settings=framework_settings(),
            custom_gradients=frozenset(_gradient_registry()),
        )


def run_worker(control_fd: int) -> int:
    """Serve trials over the control socket ``control_fd`` until retired or unfit (see the
    module docstring); returns the exit status. The process is non-dumpable
    (:func:`~pedl.exec.make_undumpable`): the tokens it is handed stay out of other processes'
    reach."""
    make_undumpable()
    die_with_master()
    configure_logging()
    preload()
    # Everything imported so far lives as long as the process: later collections skip it
    # (a full collection over TensorFlow's objects takes ~0.5 s).
    gc.freeze()
    return serve_trials(control_fd)


def serve_trials(control_fd: int) -> int:
    """The worker's loop over the control socket ``control_fd`` (see the module docstring), in
    a process already set up as :func:`run_worker` sets it up (or forked from one, by a
    :mod:`template <pedl.exec._template>`); returns the exit status."""
    control = socket.socket(fileno=control_fd)
    own_output = (os.dup(1), os.dup(2))
    baseline = ProcessState.take()
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, MAX_MESSAGE, 2)
        except OSError:
            return EXIT_OK
        if not data:
            return EXIT_OK
        assignment = json.loads(data)
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            raise RuntimeError(f"a trial came with {len(fds)} file descriptors, not 2")
        returncode, fit = run_assigned(assignment, (fds[0], fds[1]), own_output, baseline)
        if not fit:
            return returncode
        reply = {"trial_id": assignment["trial_id"], "returncode": returncode}
        try:
            control.send(json.dumps(reply).encode())
        except OSError:
            return EXIT_OK


def preload(modules: tuple[str, ...] = PRELOAD) -> None:
    """Import ``modules``; one that does not import in this environment (not installed, or
    another version of the framework) is left to the trial to import (and to say what to
    install)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:
            continue


def run_assigned(
    assignment: dict[str, Any],
    output: tuple[int, int],
    own_output: tuple[int, int],
    baseline: ProcessState,
) -> tuple[int, bool]:
    """Run one trial with its output on ``output`` (stdout, stderr write ends, closed here)
    and clean up after it; return its exit status and whether this process is fit for
    another trial."""
    flush_output()
    os.dup2(output[0], 1)
    os.dup2(output[1], 2)
    os.close(output[0])
    os.close(output[1])
    try:
        os.environ.update({str(k): str(v) for k, v in assignment.get("env", {}).items()})
        tempfile.tempdir = None  # the trial's TMPDIR, read again
        token = assignment.get("token")
        returncode, normal = _call(lambda: serve_trial(token))
        try:
            problems = clean_up(baseline)
        except Exception:
            traceback.print_exc()
            problems = ["the clean-up after the trial failed"]
        fit = normal and returncode == EXIT_OK and not problems
        if returncode == EXIT_OK and problems:
            print(
                "pedl worker: this process runs no further trial: " + "; ".join(problems),
                file=sys.stderr,
            )
    finally:
        flush_output()
        os.dup2(own_output[0], 1)
        os.dup2(own_output[1], 2)
    return returncode, fit


def clean_up(baseline: ProcessState) -> list[str]:
    """Undo what a trial changed in this process (see the module docstring); return what
    could not be undone, in words (empty: the process is as before the trial)."""
    model_def.unload()
    if dict(os.environ) != baseline.environ:
        os.environ.clear()
        os.environ.update(baseline.environ)
    tempfile.tempdir = baseline.tempdir
    with contextlib.suppress(OSError):
        os.chdir(baseline.cwd)
    sys.path[:] = baseline.path
    sys.stdout, sys.stderr = baseline.stdout, baseline.stderr
    root = logging.getLogger()
    root.handlers[:] = baseline.root_handlers
    root.setLevel(baseline.root_level)
    if warnings.filters != baseline.warning_filters:  # e.g. simplefilter("error")
        cast("list[Any]", warnings.filters)[:] = baseline.warning_filters
        getattr(warnings, "_filters_mutated", lambda: None)()
    keras: Any = sys.modules.get("keras")
    if keras is not None and hasattr(keras, "backend"):
        clear_session = keras.backend.clear_session
        if "free_memory" in inspect.signature(clear_session).parameters:
            clear_session(free_memory=False)
        else:  # Keras 2 (TensorFlow 2.15's, in an estimator environment)
            clear_session()
    _forget_tracing_counts()
    _forget_custom_gradients(baseline.custom_gradients)
    # Free the trial's garbage now (tens of ms, more on a busy machine) rather than during
    # the next trial's start, where the collector would otherwise do it.
    gc.collect()
    problems = []
    children = child_processes()
    if children:
        problems.append(f"child processes it started still run ({_few(children)})")
    threads = _leftover_threads(baseline.threads)
    if threads:
        problems.append(f"threads it started still run ({_few(t.name for t in threads)})")
    settings = framework_settings()
    changed = [k for k, v in settings.items() if baseline.settings.get(k, v) != v]
    if changed:
        problems.append(f"it changed process-wide framework settings ({_few(changed)})")
    return problems


def child_processes() -> list[int]:
    """The pids of this process's children still running (exited ones are reaped first)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass
    tasks = Path("/proc/self/task")
    if not tasks.is_dir():
        return [p.pid for p in multiprocessing.active_children() if p.pid is not None]
    pids: list[int] = []
    for path in tasks.glob("*/children"):
        with contextlib.suppress(OSError):
            pids.extend(int(pid) for pid in path.read_text().split())
    return pids


def _forget_tracing_counts() -> None:
    """TensorFlow counts each function's retracing across the process and warns about "tf.function
    retracing" past 5 in a row: a fresh process would not count the earlier trials'."""
    module = sys.modules.get("tensorflow.python.eager.polymorphic_function.polymorphic_function")
    manager = getattr(module, "_frequent_tracing_detector_manager", None)
    detectors = getattr(manager, "_detectors", None)
    if detectors is not None:
        detectors.clear()


def _gradient_registry() -> dict[str, Any]:
    """TensorFlow's registry of gradient functions (empty if TensorFlow is not imported)."""
    ops = sys.modules.get("tensorflow.python.framework.ops")
    registry = getattr(getattr(ops, "_gradient_registry", None), "_registry", None)
    return registry if isinstance(registry, dict) else {}


def _forget_custom_gradients(before: frozenset[str]) -> None:
    """Unregister the gradients of ``tf.custom_gradient`` functions traced by the trial: each
    trace registers one under a new name, and the registry keeps its whole graph alive (~4 MB
    per trial of a tiny Keras model, for the life of the process)."""
    registry = _gradient_registry()
    for name in [n for n in registry if n not in before and n.startswith("CustomGradient-")]:
        del registry[name]


def _leftover_threads(before: frozenset[threading.Thread]) -> list[threading.Thread]:
    deadline = time.monotonic() + _THREAD_GRACE_SECONDS
    left = [t for t in threading.enumerate() if t not in before]
    for thread in left:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in left if t.is_alive()]


def _call(function: Callable[[], int]) -> tuple[int, bool]:
    """``function()``'s exit status and whether it returned (rather than raised); what it
    raised is handled as the interpreter would at the top of a trial process."""
    try:
        return function(), True
    except SystemExit as exit_:
        code = exit_.code
        if code is None or isinstance(code, int):
            return code or 0, False
        print(code, file=sys.stderr)
        return EXIT_ERROR, False
    except BaseException:
        traceback.print_exc()
        return EXIT_ERROR, False


def flush_output() -> None:
    """Flush Python's and C's buffered output (before file descriptors 1 and 2 move)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.flush()
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


def _few(items: Any, limit: int = 3) -> str:
    names = [str(item) for item in items]
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more
