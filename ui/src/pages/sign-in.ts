// The sign-in form: the master's accounts (`pedl user create`; `admin` from its first start).
// Signing in sets the session's cookies (src/auth.ts): every tab of this browser is signed in.

import { ApiError, api } from "../api";
import { errorMessage, notice } from "../components/notice";
import { h, replaceChildren } from "../dom";

/** Where the administrator's password is: `make demo`'s file, or a master's first start. */
function passwordHint(): HTMLElement {
  return h(
    "p",
    { class: "sign-in-hint", "data-testid": "sign-in-hint" },
    "Started with ",
    h("code", {}, "make demo"),
    "? Sign in as ",
    h("code", {}, "admin"),
    " with the password it printed, kept in ",
    h("code", {}, ".pedl-demo/admin-password"),
    " of the PEDL checkout (",
    h("code", {}, "$PEDL_DEMO_HOME/admin-password"),
    " if you moved it). Another master printed the ",
    h("code", {}, "admin"),
    " password once, at its first start; ",
    h("code", {}, "pedl user create"),
    " makes more accounts.",
  );
}

/** Show the form in `container`; `signedIn` runs with the username once the master accepted
 * the password. */
export function signInForm(container: HTMLElement, signedIn: (username: string) => void, reason?: string): void {
  const user = h("input", {
    id: "sign-in-username",
    name: "username",
    autocomplete: "username",
    required: true,
    "data-testid": "sign-in-username",
  });
  const password = h("input", {
    id: "sign-in-password",
    name: "password",
    type: "password",
    autocomplete: "current-password",
    required: true,
    "data-testid": "sign-in-password",
  });
  const message = h("div", { class: "sign-in-message", "aria-live": "polite" });
  const submit = h("button", { type: "submit", class: "primary", "data-testid": "sign-in-submit" }, "Sign in");
  const form = h(
    "form",
    { class: "sign-in", "aria-labelledby": "sign-in-title", "data-testid": "sign-in-form" },
    h("h1", { id: "sign-in-title" }, "Sign in to PEDL"),
    reason ? notice(reason, "info") : null,
    h("label", { for: "sign-in-username" }, "Username"),
    user,
    h("label", { for: "sign-in-password" }, "Password"),
    password,
    submit,
    message,
    passwordHint(),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit.disabled = true;
    replaceChildren(message);
    api
      .login(user.value.trim(), password.value)
      .then((session) => signedIn(session.username))
      .catch((err: unknown) => {
        const wrong = err instanceof ApiError && err.status === 401;
        replaceChildren(message, notice(wrong ? "Wrong username or password." : errorMessage(err)));
        password.select();
      })
      .finally(() => {
        submit.disabled = false;
      });
  });
  replaceChildren(container, form);
  user.focus();
}
