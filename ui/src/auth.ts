// Signing in: the session token lives in this tab's sessionStorage (gone when the tab
// closes), goes with every API request, and a 401 answer forgets it and shows the sign-in
// form again.

const KEY = "pedl.token";
const USER = "pedl.username";

export function token(): string | null {
  try {
    return sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function username(): string | null {
  try {
    return sessionStorage.getItem(USER);
  } catch {
    return null;
  }
}

/** The Authorization header of the signed-in session (none when signed out). */
export function authHeaders(): Record<string, string> {
  const current = token();
  return current ? { Authorization: `Bearer ${current}` } : {};
}

export function remember(newToken: string, name: string): void {
  sessionStorage.setItem(KEY, newToken);
  sessionStorage.setItem(USER, name);
}

export function forget(): void {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(USER);
}

/** The master refused the token (expired, revoked): forget it and ask for a new sign-in. */
export function signInAgain(): void {
  if (token() === null) return;
  forget();
  document.dispatchEvent(new CustomEvent("pedl:signed-out"));
}
