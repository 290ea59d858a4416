"""The accounts a master starts with: the ``admin`` account, created at the first start."""

from __future__ import annotations

import logging
import sys

from pedl.db import Database
from pedl.db import users as users_repo
from pedl.master._settings import MasterSettings

logger = logging.getLogger("pedl.master")

ADMIN_PASSWORD_ENV = "PEDL_ADMIN_PASSWORD"


def prepare_accounts(database: Database, settings: MasterSettings) -> str | None:
    """Migrate the database and make sure the ``admin`` account exists: created at the first
    start with ``settings.admin_password`` (``PEDL_ADMIN_PASSWORD``) or a generated password;
    when it exists and ``admin_password`` is set, its password is set to that (a way back in
    for a forgotten password). Expired sessions are deleted. Returns the generated password,
    if one was generated (the caller shows it, once)."""
    database.upgrade()
    secret = settings.admin_password
    with database.session(write=True) as session:
        created, generated = users_repo.ensure_admin(
            session, None if secret is None else secret.get_secret_value()
        )
        users_repo.delete_expired_sessions(session)
    if created:
        logger.info("created the administrator account %r", users_repo.ADMIN)
    return generated


def announce_password(password: str) -> None:
    """Show the generated password of ``admin`` on standard output (this once only)."""
    sys.stdout.write(
        "\n"
        f"  PEDL created the administrator account {users_repo.ADMIN!r} with the password\n\n"
        f"      {password}\n\n"
        "  It is shown only this once. Sign in with `pedl user login admin` (or set\n"
        "  PEDL_USER and PEDL_PASSWORD), then choose your own with `pedl user change-password`.\n"
        f"  Lost it? Restart the master with {ADMIN_PASSWORD_ENV} set to a new one.\n\n"
    )
    sys.stdout.flush()
