// Whether the master has accounts, as the page's own response says (its pedl_accounts cookie,
// pedl/master/api/_web_ui.py): without a session, the sign-in form shows at once, with no
// request that the master would answer 401 (the browser's console logs every one). The
// cookie is read once and dropped (the next page load brings it again): the browser keeps no
// cookie of the master's once signed out.

const ACCOUNTS_COOKIE = "pedl_accounts";

function readOnce(): boolean | null {
  for (const part of document.cookie.split(";")) {
    const [name, value] = part.trim().split("=");
    if (name !== ACCOUNTS_COOKIE) continue;
    document.cookie = `${ACCOUNTS_COOKIE}=; Max-Age=0; Path=/; SameSite=Strict`;
    return value !== "off";
  }
  return null;
}

let known: boolean | null | undefined;

/** False only for a `--no-auth` master (its page says `off`); true for one with accounts;
 * null when the page came without the cookie (the master's answer then decides, src/main.ts). */
export function accountsRequired(): boolean | null {
  if (known === undefined) known = readOnce();
  return known;
}
