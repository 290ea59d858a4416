// The sign-in form: the master's accounts (`pedl user create`; `admin` from its first start).

import { ApiError, api } from "../api";
import { remember } from "../auth";
import { errorMessage, notice } from "../components/notice";
import { h, replaceChildren } from "../dom";

/** Show the form in `container`; `signedIn` runs once the master accepted the password. */
export function signInForm(container: HTMLElement, signedIn: () => void, reason?: string): void {
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
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit.disabled = true;
    replaceChildren(message);
    api
      .login(user.value.trim(), password.value)
      .then((session) => {
        remember(session.token, session.username);
        signedIn();
      })
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
