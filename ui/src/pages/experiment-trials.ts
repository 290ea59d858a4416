// Trials: a sortable, filterable, paginated table of the experiment's trials with their
// hyperparameters, state, outcome and metric; each row opens its trial. While the
// experiment runs, the page shown is fetched again every few seconds (one page, no more).

import { type Experiment, type Trial, type TrialState, TRIAL_STATES, api } from "../api";
import { errorMessage, notice } from "../components/notice";
import { stateBadge } from "../components/state-badge";
import { type Column, dataTable, pager, swapTable } from "../components/table";
import { h } from "../dom";
import {
  EM_DASH,
  elapsed,
  formatDuration,
  formatInteger,
  formatNumber,
  formatState,
  formatTime,
  formatValue,
} from "../format";
import { declaredTypes, flattenHparams, hparamNames } from "../hparams";
import { Poller } from "../poll";
import { href, setQuery } from "../router";
import type { ExperimentContext, ExperimentTab } from "./experiment-context";

const PAGE_SIZE = 50;
const DEFAULT_SORT = "id";
// The experiment page's own interval: a trial's state here is at most one poll behind the API.
const POLL_MS = 3000;

interface TrialsState {
  state: TrialState | "";
  sort: string;
  page: number;
}

function readState(query: URLSearchParams): TrialsState {
  const state = query.get("state") ?? "";
  return {
    state: (TRIAL_STATES as readonly string[]).includes(state) ? (state as TrialState) : "",
    sort: query.get("sort") || DEFAULT_SORT,
    page: Math.max(1, Number.parseInt(query.get("page") ?? "1", 10) || 1),
  };
}

export class TrialsTab implements ExperimentTab {
  readonly el: HTMLElement;
  private state: TrialsState;
  private readonly stateSelect: HTMLSelectElement;
  private readonly count = h("span", { class: "muted count", "aria-live": "polite" });
  private readonly tableHost = h("div", { class: "table-wrap" });
  private readonly pagerHost = h("div");
  private readonly message = h("div");
  private controller: AbortController | null = null;
  private readonly poller = new Poller(() => this.load(), POLL_MS);
  private readonly unsubscribe: () => void;
  private shownState: string | null = null;

  constructor(
    private readonly context: ExperimentContext,
    query: URLSearchParams,
  ) {
    this.state = readState(query);
    this.stateSelect = h(
      "select",
      { id: "trials-state", onchange: () => setQuery({ state: this.stateSelect.value, page: null }) },
      h("option", { value: "" }, "All states"),
      TRIAL_STATES.map((s) => h("option", { value: s }, formatState(s))),
    );
    this.stateSelect.value = this.state.state;
    this.el = h(
      "div",
      {},
      h(
        "form",
        { class: "filters", onsubmit: (e: Event) => e.preventDefault() },
        h("div", { class: "field" }, h("label", { for: "trials-state" }, "State"), this.stateSelect),
        this.count,
      ),
      this.message,
      this.tableHost,
      this.pagerHost,
    );
    // A change of the experiment's state (pause, activate, kill, the end) changes its trials':
    // read them at once rather than at this tab's next poll.
    this.unsubscribe = context.subscribe((experiment) => {
      if (this.shownState !== null && this.shownState !== experiment.state) void this.load();
      this.shownState = experiment.state;
    });
    void this.load().then((live) => {
      if (live) this.poller.start();
    });
  }

  update(query: URLSearchParams): void {
    this.state = readState(query);
    this.stateSelect.value = this.state.state;
    void this.load();
  }

  dispose(): void {
    this.unsubscribe();
    this.poller.stop();
    this.controller?.abort();
  }

  private async load(): Promise<boolean> {
    const live = this.context.live;
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    const { state, sort, page } = this.state;
    try {
      const [experiment, result] = await Promise.all([
        this.context.ready,
        api.trials(
          this.context.id,
          { state: state ? [state] : undefined, sort, limit: PAGE_SIZE, offset: (page - 1) * PAGE_SIZE },
          controller.signal,
        ),
      ]);
      if (controller.signal.aborted) return live;
      this.message.replaceChildren();
      this.render(result.items, result.total, experiment);
    } catch (err) {
      if (!controller.signal.aborted)
        this.message.replaceChildren(notice(`Could not load the trials: ${errorMessage(err)}`));
    }
    return live;
  }

  private render(trials: Trial[], total: number, experiment: Experiment): void {
    const { page, sort } = this.state;
    this.count.textContent = `${formatInteger(total)} trial${total === 1 ? "" : "s"}`;
    const flat = new Map(trials.map((t) => [t.id, flattenHparams(t.hparams)]));
    // Constants of the config are the same in every row: left out (the Config tab has them).
    const declared = declaredTypes(experiment.config.hyperparameters);
    const now = Date.now();
    const columns: Column<Trial>[] = [
      {
        label: "Trial",
        sortKey: "id",
        numeric: true,
        cell: (t) => h("a", { href: href(`/trials/${t.id}`) }, String(t.id)),
      },
      {
        label: "State",
        sortKey: "state",
        cell: (t) => stateBadge(t.state, "trial-state", { kind: "trial", outcome: t.outcome }),
      },
      {
        label: "Outcome",
        cell: (t) =>
          t.error
            ? h("span", { class: "error-text", title: `${t.error.type}: ${t.error.message}` }, t.error.type)
            : t.outcome
              ? formatState(t.outcome)
              : h("span", { class: "muted" }, EM_DASH),
      },
      {
        label: `Best ${experiment.searcher_metric ?? "metric"}`,
        sortKey: "best_validation",
        numeric: true,
        cell: (t) => h("span", { class: "metric" }, formatNumber(t.best_validation)),
      },
      { label: "Batches", sortKey: "total_batches", numeric: true, cell: (t) => formatInteger(t.total_batches) },
      { label: "Restarts", sortKey: "restarts", numeric: true, cell: (t) => formatInteger(t.restarts) },
      ...hparamNames(trials)
        .filter((name) => declared.get(name) !== "const")
        .map((name): Column<Trial> => ({
          label: name,
          numeric: trials.some((t) => typeof flat.get(t.id)?.[name] === "number"),
          className: "hparam",
          title: `Hyperparameter ${name}`,
          cell: (t) => formatValue(flat.get(t.id)?.[name]),
        })),
      { label: "Started", cell: (t) => formatTime(t.created_at) },
      { label: "Duration", numeric: true, cell: (t) => formatDuration(elapsed(t.created_at, t.ended_at, now)) },
    ];
    swapTable(
      this.tableHost,
      dataTable(trials, {
        caption: `Trials of experiment ${experiment.id}`,
        columns,
        testId: "trials-table",
        rowTestId: "trial-row",
        rowAttrs: (t) => ({ "data-trial-id": String(t.id) }),
        rowKey: (t) => String(t.id),
        rowHref: (t) => href(`/trials/${t.id}`),
        sort,
        onSort: (next) => setQuery({ sort: next === DEFAULT_SORT ? null : next, page: null }),
        empty: this.state.state ? `No ${formatState(this.state.state)} trials.` : "No trials yet.",
      }),
    );
    this.pagerHost.replaceChildren(
      total > PAGE_SIZE || page > 1 ? pager(total, page, PAGE_SIZE, (p) => setQuery({ page: p > 1 ? p : null })) : "",
    );
  }
}
