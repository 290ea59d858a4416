import { h } from "../dom";
import { formatPercent } from "../format";

/** A progress bar (0..1) with its percentage, for people and for assistive technology. */
export function progressBar(fraction: number, state: string, label = "Progress"): HTMLElement {
  const clamped = Math.max(0, Math.min(1, Number.isFinite(fraction) ? fraction : 0));
  const percent = Math.round(clamped * 100);
  return h(
    "div",
    { class: "progress", "data-testid": "progress-bar" },
    h(
      "div",
      {
        class: `progress-track state-${state.toLowerCase()}`,
        role: "progressbar",
        "aria-label": label,
        "aria-valuemin": 0,
        "aria-valuemax": 100,
        "aria-valuenow": percent,
      },
      h("div", { class: "progress-fill", style: `width: ${clamped * 100}%` }),
    ),
    h("span", { class: "progress-text" }, formatPercent(clamped)),
  );
}
