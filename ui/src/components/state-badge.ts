import { h } from "../dom";
import { formatState } from "../format";

/** What a badge's state is: an experiment's, a trial's or a checkpoint's (their words differ). */
export type StateKind = "experiment" | "trial" | "checkpoint";

const SHARED: Record<string, string> = {
  PAUSED: "Paused by a user: nothing runs until it is activated; it resumes from its latest checkpoint.",
  STOPPING_CANCELED: "Canceling: its running trials checkpoint and stop; then it is canceled.",
  STOPPING_KILLED: "Killing: its running processes are stopped at once, without a checkpoint.",
  CANCELED: "Ended by a cancel or kill before its search or training was done.",
  ERROR: "Ended in an error: see why on its page.",
};

const MEANINGS: Record<StateKind, Record<string, string>> = {
  experiment: {
    ...SHARED,
    ACTIVE: "Searching: its trials run, wait for slots or wait for the searcher.",
    COMPLETED: "The search is done: every trial ended.",
  },
  trial: {
    ...SHARED,
    ACTIVE:
      "Live, but no process runs it now: it waits to be scheduled, or for the searcher " +
      "(an adaptive search's trial that finished its rung waits to be promoted or stopped).",
    QUEUED: "Waiting for free slots to start its process.",
    RUNNING: "Its process is training, validating or checkpointing now.",
    COMPLETED: "Ended: the searcher has no more work for it (see its outcome).",
    ERROR: "Ended in an error after its restarts: see why on its page.",
  },
  checkpoint: {
    ACTIVE: "Being written.",
    COMPLETED: "Stored and usable.",
    ERROR: "Its upload failed: not usable.",
    DELETED: "Its files were deleted (by the retention policy or a user).",
    PARTIALLY_DELETED:
      "Some of its files were removed by a user: what is left can be downloaded; no trial resumes from it.",
  },
};

const OUTCOME_WORDS: Record<string, string> = {
  COMPLETED: "completed",
  STOPPED_EARLY: "stopped early",
  STOPPED_BY_SEARCHER: "stopped by the searcher",
  INVALID_HP: "invalid hyperparameters",
  ERRORED: "errored",
  KILLED: "killed",
  PREEMPTED: "preempted",
};

/** Beside an ACTIVE trial that has trained (pedl.engine's WAITING_NOTE). */
export const WAITING_NOTE = "waiting for the searcher";

const WAITING_MEANING =
  "Its process exited after the work the searcher gave it (an adaptive search's rung): no " +
  "process runs it now. The searcher decides whether it trains further (it runs again from " +
  "its checkpoint) or stops. Its duration counts its whole life in the search, waits included; " +
  "killing it ends it at once (there is no process to stop) and the searcher gives it no more work.";

const OUTCOME_MEANINGS: Record<string, string> = {
  STOPPED_EARLY: "Its training code stopped it before the searcher's length.",
  STOPPED_BY_SEARCHER: "The searcher stopped it short of the full length (not promoted past a rung).",
  INVALID_HP: "Its code rejected its hyperparameters (InvalidHP): it did not train.",
  ERRORED: "Its process failed: see the error on its page.",
  KILLED: "A user killed it.",
};

const TERMINAL = new Set(["COMPLETED", "CANCELED", "ERROR"]);

/** A trial's outcome in words where its state hides it (as the CLI and the SDK's
 * `Trial.outcome_note` say it): an ended trial's outcome unless its state implies it, a live
 * trial's latest run when it errored, and for an ACTIVE trial that has trained (`batches`)
 * otherwise that it waits for the searcher (no process runs it). */
export function outcomeNote(state: string, outcome: string | null | undefined, batches = 0): string | null {
  if (TERMINAL.has(state)) {
    if (!outcome) return null;
    if ((state === "COMPLETED" && outcome === "COMPLETED") || (state === "ERROR" && outcome === "ERRORED")) return null;
    return OUTCOME_WORDS[outcome] ?? outcome.toLowerCase();
  }
  if (outcome === "ERRORED") return "errored, to be restarted";
  return state === "ACTIVE" && batches > 0 ? WAITING_NOTE : null;
}

/** What a state means, for its tooltip. */
export function stateMeaning(state: string, kind: StateKind): string {
  return MEANINGS[kind][state] ?? formatState(state);
}

/** A state as a coloured badge whose tooltip says what it means; with a trial's `outcome` (and
 * its `batches`), the outcome beside it where the state hides it, or that it waits for the
 * searcher. `testId` marks it for the browser tests. */
export function stateBadge(
  state: string,
  testId?: string,
  options: { kind?: StateKind; outcome?: string | null; batches?: number } = {},
): HTMLElement {
  const kind = options.kind ?? "experiment";
  const badge = h(
    "span",
    {
      class: `badge state-${state.toLowerCase()}`,
      "data-testid": testId ?? null,
      "data-state": state,
      title: `${formatState(state)}: ${stateMeaning(state, kind)}`,
    },
    formatState(state),
  );
  const note = outcomeNote(state, options.outcome, options.batches);
  if (note === null) return badge;
  const meaning =
    note === WAITING_NOTE ? WAITING_MEANING : options.outcome ? OUTCOME_MEANINGS[options.outcome] : undefined;
  return h(
    "span",
    { class: "state-with-outcome" },
    badge,
    h(
      "span",
      {
        class: "outcome-note",
        "data-testid": "outcome-note",
        "data-outcome": options.outcome ?? null,
        title: meaning ?? note,
      },
      note,
    ),
  );
}
