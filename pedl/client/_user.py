"""An account on the master, as the SDK shows it (Determined's ``User``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from pedl.client._errors import PEDLError

if TYPE_CHECKING:
    from pedl.client._session import Session


class User:
    """An account, under Determined's names: ``user_id``, ``username``, ``admin``,
    ``active``, ``created_at``; ``remote`` (always false: PEDL signs in with passwords only),
    ``display_name`` and the ``agent_*`` fields (always ``None``: PEDL keeps no display
    names and runs every trial as the master's own OS user).

    The attributes are as last fetched; the methods change the account on the master
    (administrators only, except :meth:`reload`) and fetch it again."""

    def __init__(self, record: dict[str, Any], session: Session | None = None) -> None:
        self._session = session
        self._load(record)

    def _load(self, record: dict[str, Any]) -> None:
        self._record = dict(record)
        self.user_id: int | None = int(record["id"]) if record.get("id") is not None else None
        self.username: str = str(record["username"])
        self.admin: bool = bool(record["admin"])
        self.active: bool = bool(record["active"])
        self.created_at = datetime.fromisoformat(str(record["created_at"]).replace("Z", "+00:00"))
        self.remote = False
        self.display_name: str | None = None
        self.agent_uid: int | None = None
        self.agent_gid: int | None = None
        self.agent_user: str | None = None
        self.agent_group: str | None = None

    @classmethod
    def from_dict(cls, record: dict[str, Any], session: Session | None = None) -> User:
        """The user of an API record (``GET /users/{username}``)."""
        return cls(record, session)

    def __repr__(self) -> str:
        return f"User(user_id={self.user_id}, username={self.username!r}, admin={self.admin})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, User) and self._record == other._record

    __hash__ = None  # type: ignore[assignment]  # mutable, as Determined's

    def to_dict(self) -> dict[str, Any]:
        """The API's JSON record as last fetched."""
        return dict(self._record)

    def _bound(self) -> Session:
        if self._session is None:
            raise PEDLError("this User is not bound to a master: get it from a Client")
        return self._session

    @property
    def _path(self) -> str:
        return f"/users/{quote(self.username, safe='')}"

    def reload(self) -> None:
        """Fetch the account again (by id, so a rename elsewhere is seen)."""
        session = self._bound()
        if self.user_id is not None:
            self._load(session.get(f"/users/by-id/{self.user_id}"))
        else:
            self._load(session.get(self._path))

    def _patch(self, **changes: Any) -> None:
        self._load(self._bound().patch(self._path, json=changes))

    def rename(self, new_username: str) -> None:
        """Rename the account (and the owner of everything it owns)."""
        self._patch(username=new_username)

    def activate(self) -> None:
        """Let the account sign in again."""
        self._patch(active=True)

    def deactivate(self) -> None:
        """Stop the account from signing in; its sessions end."""
        self._patch(active=False)

    def change_display_name(self, display_name: str) -> None:
        """Refused by the master (:class:`PEDLError` 422): PEDL keeps no display names."""
        self._patch(display_name=display_name)

    def change_password(self, new_password: str) -> None:
        """Set the account's password (an administrator's, for another account; for one's
        own, use :meth:`pedl.client.Client.change_password`, which asks for the old one)."""
        self._bound().post(f"{self._path}/password", json={"password": new_password})

    def link_with_agent(
        self,
        agent_uid: int | None = None,
        agent_gid: int | None = None,
        agent_user: str | None = None,
        agent_group: str | None = None,
    ) -> None:
        """Not in PEDL: every trial runs as the master's own OS user (:class:`PEDLError`)."""
        raise PEDLError(
            "PEDL runs every trial as the OS user of the master (or of its Ray workers): "
            "there is no agent user to link",
            field="agent_user",
        )
