import { h } from "../dom";
import { formatState } from "../format";

/** A state as a coloured badge; `testId` marks an experiment's state for the browser tests. */
export function stateBadge(state: string, testId?: string): HTMLElement {
  return h(
    "span",
    { class: `badge state-${state.toLowerCase()}`, "data-testid": testId ?? null, "data-state": state, title: state },
    formatState(state),
  );
}
