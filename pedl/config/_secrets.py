"""What counts as a secret, and how one is masked wherever a config is shown or kept.

One place decides it for every view: the API's experiments (and so the web UI and
``pedl experiment describe``, which read the API) show an experiment's config through
:func:`mask_config`, and so does the ``metadata.json`` a checkpoint carries (anyone who may
read the checkpoint may download it); the stored config keeps the real values, which the
trials need. Here, beside the config, so that the framework controllers use it without
importing the master.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

MASK = "********"
"""What a secret value is shown as."""

_SECRET_WORDS = ("PASSWORD", "PASSWD", "SECRET", "TOKEN", "KEY", "CREDENTIAL", "CONNECTION_STRING")
_SECRET_PARTS = frozenset({"PASS", "PWD", "AUTH"})
_NOT_SECRET = frozenset({"PWD", "OLDPWD"})  # the shell's working directories
_URL_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/:@\s\x00]*:(?P<password>[^@\s/\x00]*)@")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable or setting named ``name`` looks like it holds a
    secret: its name contains PASSWORD, PASSWD, SECRET, TOKEN, KEY, CREDENTIAL or
    CONNECTION_STRING (Azure's carry an account key), or one of its ``_``-separated parts is
    PASS, PWD or AUTH (case-insensitive; ``PWD`` and ``OLDPWD`` themselves are directories).
    ``AWS_SECRET_ACCESS_KEY``, ``WANDB_API_KEY``, ``PGPASSWORD``, ``HF_TOKEN``, ``DET_PASS``,
    ``AZURE_STORAGE_CONNECTION_STRING`` all are."""
    upper = name.upper()
    if upper in _NOT_SECRET:
        return False
    if any(word in upper for word in _SECRET_WORDS):
        return True
    return any(part in _SECRET_PARTS for part in re.split(r"[^A-Z0-9]+", upper))


def url_password_spans(text: str) -> list[tuple[int, int]]:
    """Where the passwords of the URLs in ``text`` are (``scheme://user:password@host``):
    ``(start, end)`` of each, in order."""
    return [m.span("password") for m in _URL_PASSWORD.finditer(text)]


def mask_url(text: str) -> str:
    """``text`` with the password of every URL in it (``scheme://user:password@host``)
    replaced by :data:`MASK` (e.g. a database URL in a log line)."""
    out, last = [], 0
    for start, end in url_password_spans(text):
        out += [text[last:start], MASK]
        last = end
    return "".join([*out, text[last:]])


def mask_variable(entry: str) -> str:
    """One ``NAME=value`` entry as it may be shown: the value masked when the name looks
    secret (:func:`is_secret_name`), else with the password of any URL in it masked."""
    name, sep, value = entry.partition("=")
    if not sep:
        return entry
    if is_secret_name(name):
        return f"{name}={MASK}" if value else entry
    return f"{name}={mask_url(value)}"


def mask_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of an experiment config (canonical form) to show: the values of
    ``environment.environment_variables`` whose names look secret (in the list form and in
    each list of the per-device form), the passwords of URLs in the others, and the secret
    looking fields of ``checkpoint_storage`` (e.g. S3's ``secret_key``, ``access_key``) are
    :data:`MASK`. Everything else is as given; ``config`` is not changed."""
    shown = dict(config)
    environment = shown.get("environment")
    if isinstance(environment, Mapping):
        environment = dict(environment)
        variables = environment.get("environment_variables")
        if isinstance(variables, list):
            environment["environment_variables"] = _mask_entries(variables)
        elif isinstance(variables, Mapping):
            environment["environment_variables"] = {
                device: _mask_entries(entries) if isinstance(entries, list) else entries
                for device, entries in variables.items()
            }
        shown["environment"] = environment
    storage = shown.get("checkpoint_storage")
    if isinstance(storage, Mapping):
        shown["checkpoint_storage"] = {
            key: MASK if value and isinstance(key, str) and is_secret_name(key) else value
            for key, value in storage.items()
        }
    return shown


def _mask_entries(entries: list[Any]) -> list[Any]:
    return [mask_variable(entry) if isinstance(entry, str) else entry for entry in entries]
