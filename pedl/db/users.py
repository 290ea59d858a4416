"""Queries on user accounts and their signed-in sessions; password and token hashing.

Passwords are stored as argon2id hashes (OWASP's parameters: 19 MiB, 2 passes, 1 lane; a
hash or a check takes ~0.05 s of one core); session tokens, 256-bit random strings, as their
SHA-256 (enough for a secret that cannot be guessed). A token is returned only by
:func:`create_session`, never stored or shown again. Records name their owner by username, so
renaming an account (:func:`rename_user`) renames it in every ``owner`` column too.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from pedl.db._errors import ConflictError, NotFoundError
from pedl.db._models import Base, User, UserSession
from pedl.db._types import utcnow

ADMIN = "admin"
"""The administrator created at the master's first start."""

TOKEN_PREFIX = "pedl-user."
"""Every session token starts with this (trial tokens never contain a dot), so a token tells
at a glance whether it is a user's or a trial's."""

_hasher = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)
_DUMMY_HASH = _hasher.hash("not a password of anyone")


@dataclass(frozen=True)
class SignedIn:
    """Who a valid session token belongs to, and until when it is valid."""

    user_id: int
    username: str
    admin: bool
    expires_at: datetime


def hash_password(password: str) -> str:
    """The argon2id hash (PHC string) to store for ``password``."""
    return _hasher.hash(password)


def hash_token(token: str) -> str:
    """The stored form of a session token (SHA-256, hex)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_user(
    session: Session, username: str, *, password_hash: str, admin: bool = False
) -> User:
    """Insert an active account (:class:`ConflictError` on ``username`` if it exists)."""
    if session.scalar(select(User.id).where(User.username == username)) is not None:
        raise ConflictError(f"user {username!r} already exists", field="username")
    user = User(username=username, password_hash=password_hash, admin=admin, active=True)
    session.add(user)
    session.flush()
    return user


def get_user(session: Session, username: str) -> User:
    """The account named ``username``; raises :class:`NotFoundError`."""
    user = session.scalars(select(User).where(User.username == username)).one_or_none()
    if user is None:
        raise NotFoundError("user", username)
    return user


def get_user_by_id(session: Session, user_id: int) -> User:
    """The account with id ``user_id``; raises :class:`NotFoundError`."""
    user = session.get(User, user_id)
    if user is None:
        raise NotFoundError("user", str(user_id))
    return user


def rename_user(session: Session, username: str, new_username: str) -> User:
    """Rename ``username`` to ``new_username``, and with it the owner of everything it owns
    (every mapped table's ``owner`` column). :class:`ConflictError` when the name is taken or
    for :data:`ADMIN`, which the master makes again at its start."""
    user = get_user(session, username)
    if new_username == username:
        return user
    if username == ADMIN:
        raise ConflictError(
            f"{ADMIN!r} is the account the master makes at its start: create another "
            "administrator instead of renaming it",
            field="username",
        )
    if session.scalar(select(User.id).where(User.username == new_username)) is not None:
        raise ConflictError(f"user {new_username!r} already exists", field="username")
    for table in Base.metadata.sorted_tables:
        if "owner" in table.c:
            session.execute(
                update(table).where(table.c.owner == username).values(owner=new_username)
            )
    user.username = new_username
    session.flush()
    return user


def set_admin(session: Session, username: str, admin: bool) -> User:
    """Grant or take away ``username``'s administrator role; the last active administrator
    keeps it (:class:`ConflictError`)."""
    user = get_user(session, username)
    if not admin and user.admin and user.active:
        _require_another_admin(session, user)
    user.admin = admin
    return user


def _require_another_admin(session: Session, user: User) -> None:
    others = session.scalar(
        select(User.id).where(User.admin, User.active, User.id != user.id).limit(1)
    )
    if others is None:
        raise ConflictError(f"{user.username!r} is the last active administrator", field="username")


def list_users(session: Session) -> list[User]:
    """Every account, by username."""
    return list(session.scalars(select(User).order_by(User.username)))


def set_password(
    session: Session, username: str, password_hash: str, *, keep_token: str | None = None
) -> User:
    """Change the password of ``username`` and end their sessions (but ``keep_token``'s)."""
    user = get_user(session, username)
    user.password_hash = password_hash
    _end_sessions(session, user.id, keep_token=keep_token)
    return user


def set_active(session: Session, username: str, active: bool) -> User:
    """Activate or deactivate ``username``; deactivating ends their sessions. The last active
    administrator cannot be deactivated (:class:`ConflictError`)."""
    user = get_user(session, username)
    if not active and user.admin and user.active:
        _require_another_admin(session, user)
    user.active = active
    if not active:
        _end_sessions(session, user.id)
    return user


def check_password(session: Session, username: str, password: str) -> User | None:
    """The active account ``username`` if ``password`` is its password, else ``None`` (in
    about the same time whether or not the account exists). Only reads: check it in a read
    session, so that the slow hash holds no write lock (on SQLite, every writer's)."""
    user = session.scalars(select(User).where(User.username == username)).one_or_none()
    try:
        _hasher.verify(user.password_hash if user is not None else _DUMMY_HASH, password)
    except (VerificationError, InvalidHashError):
        return None
    if user is None or not user.active:
        return None
    return user


def rehashed(user: User, password: str) -> str | None:
    """A new hash of ``password`` (the user's, just checked) when the stored one was made with
    other argon2 parameters than the current ones, else ``None``."""
    return _hasher.hash(password) if _hasher.check_needs_rehash(user.password_hash) else None


def replace_hash(session: Session, user_id: int, password_hash: str) -> None:
    """Store ``password_hash`` for the user ``user_id`` (same password, new parameters: the
    user's sessions stay valid)."""
    session.execute(update(User).where(User.id == user_id).values(password_hash=password_hash))


def create_session(session: Session, user_id: int, lifetime: timedelta) -> tuple[str, datetime]:
    """Start a session for the user ``user_id`` valid for ``lifetime``: its bearer token (the
    only time it exists in clear) and when it expires."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    expires_at = utcnow() + lifetime
    session.add(UserSession(token_hash=hash_token(token), user_id=user_id, expires_at=expires_at))
    session.flush()
    return token, expires_at


def signed_in(session: Session, token: str) -> SignedIn | None:
    """Who ``token`` signs in, if it is a session token that has not expired, was not
    revoked, and belongs to an active account; else ``None``."""
    row = session.execute(
        select(User.id, User.username, User.admin, UserSession.expires_at)
        .join(UserSession, UserSession.user_id == User.id)
        .where(
            UserSession.token_hash == hash_token(token),
            UserSession.expires_at > utcnow(),
            User.active,
        )
    ).one_or_none()
    return None if row is None else SignedIn(*row)


def end_session(session: Session, token: str) -> bool:
    """Revoke the session of ``token``; whether there was one."""
    result = session.execute(delete(UserSession).where(UserSession.token_hash == hash_token(token)))
    return bool(getattr(result, "rowcount", 0))


def delete_expired_sessions(session: Session) -> int:
    """Delete the sessions that have expired; how many."""
    result = session.execute(delete(UserSession).where(UserSession.expires_at <= utcnow()))
    return int(getattr(result, "rowcount", 0))


def ensure_admin(session: Session, password: str | None) -> tuple[bool, str | None]:
    """Make sure the :data:`ADMIN` account exists: create it when missing, with ``password``
    or, when that is ``None``, a generated one; when it exists and ``password`` is given, set
    its password to ``password`` if it is not that already (ending its sessions), and make it
    an active administrator again. Returns whether
    it was created and the generated password (``None`` unless one was generated)."""
    user = session.scalars(select(User).where(User.username == ADMIN)).one_or_none()
    if user is None:
        generated = secrets.token_urlsafe(12) if password is None else None
        chosen = password if password is not None else generated
        assert chosen is not None
        create_user(session, ADMIN, password_hash=hash_password(chosen), admin=True)
        return True, generated
    if password is not None and not _matches(user.password_hash, password):
        user.password_hash = hash_password(password)
        _end_sessions(session, user.id)
    if password is not None:
        user.admin = True
        user.active = True
    return False, None


def _matches(password_hash: str, password: str) -> bool:
    try:
        return _hasher.verify(password_hash, password)
    except (VerificationError, InvalidHashError):
        return False


def _end_sessions(session: Session, user_id: int, *, keep_token: str | None = None) -> None:
    query = delete(UserSession).where(UserSession.user_id == user_id)
    if keep_token is not None:
        query = query.where(UserSession.token_hash != hash_token(keep_token))
    session.execute(query)
