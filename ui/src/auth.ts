// Signing in: the master keeps the session token in an HttpOnly cookie (page scripts cannot
// read it) that the browser sends with every API request of every tab of this browser until
// the token expires or the user signs out. Requests that change state echo the session's CSRF
// cookie (readable, but only by the master's own pages) in the X-PEDL-CSRF header; a 401
// answer shows the sign-in form again.

const CSRF_COOKIE = "pedl_csrf";
const CSRF_HEADER = "X-PEDL-CSRF";

function csrfToken(): string | null {
  for (const part of document.cookie.split(";")) {
    const [name, ...value] = part.trim().split("=");
    if (name === CSRF_COOKIE && value.length > 0) return decodeURIComponent(value.join("="));
  }
  return null;
}

/** Whether this browser holds a session (its CSRF cookie is there; the master has the last word). */
export function hasSession(): boolean {
  return csrfToken() !== null;
}

/** The header a request that changes state carries (none when signed out). */
export function csrfHeaders(): Record<string, string> {
  const current = csrfToken();
  return current ? { [CSRF_HEADER]: current } : {};
}

/** Drop this side's trace of the session (the HttpOnly cookie is the master's to clear). */
export function forget(): void {
  document.cookie = `${CSRF_COOKIE}=; Max-Age=0; Path=/; SameSite=Strict`;
}

/** The master refused the session (expired, revoked): forget it and ask for a new sign-in. */
export function signInAgain(): void {
  if (!hasSession()) return;
  forget();
  document.dispatchEvent(new CustomEvent("pedl:signed-out"));
}
