"""The account every test master has: ``admin`` with :data:`ADMIN_PASSWORD`.

``tests/conftest.py`` puts it in the environment (``PEDL_ADMIN_PASSWORD`` for the masters the
tests start, ``PEDL_USER``/``PEDL_PASSWORD`` for the SDK and the CLI), with the CLI's and the
SDK's saved tokens in a temporary ``PEDL_CONFIG_DIR`` (never the user's own).
"""

import httpx

from tests.waits import scaled

ADMIN = "admin"
ADMIN_PASSWORD = "pedl-test-admin-password"


def auth_headers(
    master_url: str, username: str = ADMIN, password: str = ADMIN_PASSWORD
) -> dict[str, str]:
    """Sign in to the master at ``master_url``: the Authorization header of the new session."""
    response = httpx.post(
        f"{master_url}/api/v1/auth/login",
        json={"username": username, "password": password},
        timeout=scaled(30),
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['token']}"}
