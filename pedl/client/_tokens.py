"""Where the CLI and the SDK keep their session tokens: one per master, in the user's config
directory (``$PEDL_CONFIG_DIR``, else ``$XDG_CONFIG_HOME/pedl``, else ``~/.config/pedl``), in
``auth.json``, readable by its owner only (mode 0600, in a directory of mode 0700)."""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CONFIG_DIR_ENV = "PEDL_CONFIG_DIR"
USER_ENV = "PEDL_USER"
PASSWORD_ENV = "PEDL_PASSWORD"
DET_USER_ENV = "DET_USER"
DET_PASSWORD_ENV = "DET_PASS"
"""Determined's names for the same sign-in, read when ``PEDL_USER`` is not set."""


def env_credentials() -> tuple[str | None, str | None]:
    """The user and password to sign in with from the environment: ``PEDL_USER`` and
    ``PEDL_PASSWORD``, else (``PEDL_USER`` unset) Determined's ``DET_USER`` and ``DET_PASS``."""
    if os.environ.get(USER_ENV):
        return os.environ.get(USER_ENV), os.environ.get(PASSWORD_ENV)
    return os.environ.get(DET_USER_ENV), os.environ.get(DET_PASSWORD_ENV)


TOKENS_FILE = "auth.json"


def config_dir() -> Path:
    """The directory of the CLI's and the SDK's own files."""
    explicit = os.environ.get(CONFIG_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "pedl"


@dataclass(frozen=True)
class SavedToken:
    """A session token kept for one master."""

    username: str
    token: str


class TokenStore:
    """The saved session tokens, by master URL (``auth.json`` in :func:`config_dir`, or
    ``path``). Each change rewrites the file whole (a new file renamed over the old one), so
    a reader never sees half of it; a file that cannot be read counts as empty."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else config_dir() / TOKENS_FILE

    def get(self, master: str) -> SavedToken | None:
        entry = self._read().get(master)
        if not isinstance(entry, dict):
            return None
        username, token = entry.get("username"), entry.get("token")
        if not isinstance(username, str) or not isinstance(token, str):
            return None
        return SavedToken(username, token)

    def put(self, master: str, saved: SavedToken) -> None:
        tokens = self._read()
        tokens[master] = {"username": saved.username, "token": saved.token}
        self._write(tokens)

    def remove(self, master: str) -> None:
        tokens = self._read()
        if tokens.pop(master, None) is not None:
            self._write(tokens)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, tokens: dict[str, Any]) -> None:
        directory = self.path.parent
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(prefix=".auth-", dir=directory)  # mode 0600
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as file:
                json.dump(tokens, file, indent=2, sort_keys=True)
            os.chmod(temporary, 0o600)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
