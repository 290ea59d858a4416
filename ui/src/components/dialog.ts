// The confirmation asked before a destructive action. A native modal <dialog>: the rest of
// the page is inert while it is open (focus stays inside), Escape cancels, and the safe
// choice (Cancel) has the focus when it opens.

import { h } from "../dom";

export interface ConfirmOptions {
  title: string;
  message: string;
  confirmLabel: string;
  /** Red confirm button for what cannot be undone. */
  danger?: boolean;
}

let dialog: HTMLDialogElement | null = null;

/** Ask; resolves true when the user confirms. */
export function confirmAction(options: ConfirmOptions): Promise<boolean> {
  dialog?.remove();
  const cancel = h("button", { type: "button", class: "button", value: "cancel" }, "Cancel");
  const yes = h(
    "button",
    { type: "button", class: options.danger ? "button danger" : "button primary", "data-testid": "confirm-yes" },
    options.confirmLabel,
  );
  const titleId = "confirm-title";
  const el = h(
    "dialog",
    {
      class: "confirm",
      "data-testid": "confirm-dialog",
      "aria-labelledby": titleId,
      "aria-describedby": "confirm-message",
    },
    h("h2", { id: titleId }, options.title),
    h("p", { id: "confirm-message" }, options.message),
    h("div", { class: "dialog-actions" }, cancel, yes),
  );
  dialog = el;
  document.body.append(el);
  const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  return new Promise((resolve) => {
    let answered = false;
    const finish = (answer: boolean) => {
      if (answered) return;
      answered = true;
      el.close();
      el.remove();
      if (dialog === el) dialog = null;
      if (opener?.isConnected) opener.focus();
      resolve(answer);
    };
    cancel.addEventListener("click", () => finish(false));
    yes.addEventListener("click", () => finish(true));
    el.addEventListener("cancel", (event) => {
      event.preventDefault();
      finish(false);
    });
    el.addEventListener("close", () => finish(false));
    // Tab and Shift+Tab cycle between the two buttons.
    el.addEventListener("keydown", (event) => {
      if (event.key !== "Tab") return;
      event.preventDefault();
      (document.activeElement === cancel ? yes : cancel).focus();
    });
    el.showModal();
    cancel.focus();
  });
}
