"""An account on the master, as the SDK shows it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class User:
    """An account: its username, whether it is an administrator, whether it may sign in."""

    username: str
    admin: bool
    active: bool
    created_at: datetime

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> User:
        created = str(record["created_at"]).replace("Z", "+00:00")
        return cls(
            username=str(record["username"]),
            admin=bool(record["admin"]),
            active=bool(record["active"]),
            created_at=datetime.fromisoformat(created),
        )
