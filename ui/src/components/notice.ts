import { h } from "../dom";

/** A message for the user: an error they should see now, or a quiet note. */
export function notice(message: string, kind: "error" | "info" = "error"): HTMLElement {
  return h("div", { class: `notice ${kind}`, role: kind === "error" ? "alert" : "status" }, message);
}

/** A short-lived message at the bottom of the screen (an action's result). */
export function toast(message: string, kind: "error" | "info" = "info"): void {
  let region = document.getElementById("toasts");
  if (!region) {
    region = h("div", { id: "toasts", class: "toasts", "aria-live": "polite" });
    document.body.append(region);
  }
  const el = h("div", { class: `toast ${kind}`, role: kind === "error" ? "alert" : "status" }, message);
  region.append(el);
  window.setTimeout(() => el.remove(), kind === "error" ? 8000 : 4000);
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
