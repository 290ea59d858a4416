// Light or dark: the browser's choice (prefers-color-scheme) unless the user picked one with the
// top bar's switch (kept in this browser's localStorage). The page's <html data-theme> says
// which applies (index.html sets it before the app loads, so a dark page never flashes light);
// src/styles.css and the charts (src/theme.ts) follow it. A switch redraws the page.

import { h } from "./dom";
import { remount } from "./router";

export type SchemeChoice = "auto" | "light" | "dark";

const STORAGE_KEY = "pedl-color-scheme";
const DARK_QUERY = "(prefers-color-scheme: dark)";
const CHOICES: readonly { value: SchemeChoice; label: string }[] = [
  { value: "auto", label: "Auto (browser)" },
  { value: "light", label: "Light" },
  { value: "dark", label: "Dark" },
];

/** The user's choice in this browser ("auto" when none, or when storage is off). */
export function schemeChoice(): SchemeChoice {
  try {
    const stored = localStorage.getItem(STORAGE_KEY);
    return stored === "light" || stored === "dark" ? stored : "auto";
  } catch {
    return "auto";
  }
}

/** The scheme a choice means now ("auto": the browser's). */
export function resolveScheme(choice: SchemeChoice, browserDark: boolean): "light" | "dark" {
  return choice === "auto" ? (browserDark ? "dark" : "light") : choice;
}

function browserDark(): boolean {
  return typeof matchMedia === "function" && matchMedia(DARK_QUERY).matches;
}

/** Put the scheme in force on <html>; true when it changed. */
export function applyScheme(): boolean {
  const scheme = resolveScheme(schemeChoice(), browserDark());
  const root = document.documentElement;
  if (root.dataset.theme === scheme) return false;
  root.dataset.theme = scheme;
  return true;
}

/** Keep the scheme: apply it now, and again (redrawing the page, whose charts took their
 * colours when drawn) when the browser's changes while the choice is "auto". */
export function followScheme(): void {
  applyScheme();
  if (typeof matchMedia !== "function") return;
  matchMedia(DARK_QUERY).addEventListener("change", () => {
    if (applyScheme()) remount();
  });
}

/** The top bar's switch: Auto, Light or Dark. */
export function schemeSwitch(): HTMLElement {
  const select = h(
    "select",
    {
      id: "color-scheme",
      class: "scheme-switch",
      "data-testid": "color-scheme",
      title: "Light or dark pages",
      onchange: () => {
        const choice = select.value as SchemeChoice;
        try {
          if (choice === "auto") localStorage.removeItem(STORAGE_KEY);
          else localStorage.setItem(STORAGE_KEY, choice);
        } catch {
          // storage off: the choice lasts for this page only
        }
        if (applyScheme()) remount();
      },
    },
    CHOICES.map((c) => h("option", { value: c.value }, c.label)),
  );
  select.value = schemeChoice();
  return h(
    "div",
    { class: "scheme" },
    h("label", { for: "color-scheme", class: "visually-hidden" }, "Colour scheme"),
    select,
  );
}
