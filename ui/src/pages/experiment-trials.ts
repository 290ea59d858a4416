// Trials: a paginated table of the experiment's trials, sorted and filtered on the master by
// any column (hyperparameters and metrics included: a metric column is the trial's latest
// validation value), with bulk kill; each row opens its trial. The sort, the filters and
// the page live in the URL. While the experiment runs, the page shown is fetched again every
// few seconds (one page, no more).

import { type Experiment, type Trial, type TrialState, TRIAL_STATES, api, metricNumber } from "../api";
import { confirmAction } from "../components/dialog";
import { errorMessage, notice } from "../components/notice";
import { stateBadge } from "../components/state-badge";
import { type Column, columnFilter, dataTable, pager, swapTable } from "../components/table";
import { h } from "../dom";
import { elapsed, formatDuration, formatInteger, formatNumber, formatState, formatTime, formatValue } from "../format";
import { type DeclaredType, declaredTypes, flattenHparams, hparamNames } from "../hparams";
import { Poller } from "../poll";
import { href, setQuery } from "../router";
import {
  configuredHparams,
  hparamKey,
  metricKey,
  parseRanges,
  parseValues,
  splitValues,
  typedBounds,
  withRange,
  withValues,
} from "../trial-filters";
import type { ExperimentContext, ExperimentTab } from "./experiment-context";

const PAGE_SIZE = 50;
const DEFAULT_SORT = "id";
// The experiment page's own interval: a trial's state here is at most one poll behind the API.
const POLL_MS = 3000;
/** States a trial can be killed in (it has not ended and is not being stopped). */
const KILLABLE = new Set<TrialState>(["ACTIVE", "QUEUED", "RUNNING", "PAUSED"]);

interface TrialsState {
  state: TrialState | "";
  sort: string;
  page: number;
  /** `COLUMN:LOW..HIGH`, as the API takes them. */
  ranges: string[];
  /** `hparams.NAME:VALUE`, as the API takes them. */
  values: string[];
}

function readState(query: URLSearchParams): TrialsState {
  const state = query.get("state") ?? "";
  return {
    state: (TRIAL_STATES as readonly string[]).includes(state) ? (state as TrialState) : "",
    sort: query.get("sort") || DEFAULT_SORT,
    page: Math.max(1, Number.parseInt(query.get("page") ?? "1", 10) || 1),
    ranges: query.getAll("range").filter(Boolean),
    values: query.getAll("value").filter(Boolean),
  };
}

/** A filter box's text for a range: `low..high`. */
function rangeText(bounds: { low: string; high: string } | undefined): string {
  return bounds ? `${bounds.low}..${bounds.high}` : "";
}

export class TrialsTab implements ExperimentTab {
  readonly el: HTMLElement;
  private state: TrialsState;
  private readonly stateSelect: HTMLSelectElement;
  /** The filter boxes, by column key: kept across refreshes so typing is never lost. */
  private readonly filterBoxes = new Map<string, HTMLInputElement>();
  private readonly count = h("span", { class: "muted count", "aria-live": "polite" });
  private readonly tableHost = h("div", { class: "table-wrap" });
  private readonly pagerHost = h("div");
  private readonly message = h("div");
  private readonly selected = new Set<number>();
  private rows: Trial[] = [];
  private readonly bulk = h("div", { class: "bulk-actions", "data-testid": "trial-bulk-actions" });
  private readonly bulkMessage = h("span", { class: "muted", "aria-live": "polite", "data-testid": "bulk-message" });
  private metrics: string[] = [];
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
      {
        id: "trials-state",
        "aria-label": "Filter by state",
        onchange: () => setQuery({ state: this.stateSelect.value, page: null }),
      },
      h("option", { value: "" }, "All states"),
      TRIAL_STATES.map((s) => h("option", { value: s }, formatState(s))),
    );
    this.stateSelect.value = this.state.state;
    const clear = h(
      "button",
      {
        type: "button",
        "data-testid": "clear-trial-filters",
        onclick: () => setQuery({ state: null, range: null, value: null, page: null }),
      },
      "Clear filters",
    );
    this.el = h(
      "div",
      {},
      h("div", { class: "filters" }, this.count, clear),
      this.message,
      this.bulk,
      this.tableHost,
      this.pagerHost,
    );
    this.renderBulk();
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
    this.syncFilterBoxes();
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
    const { state, sort, page, ranges, values } = this.state;
    try {
      const [experiment, result, names] = await Promise.all([
        this.context.ready,
        api.trials(
          this.context.id,
          {
            state: state ? [state] : undefined,
            sort,
            range: ranges,
            value: values,
            limit: PAGE_SIZE,
            offset: (page - 1) * PAGE_SIZE,
          },
          controller.signal,
        ),
        live || this.metrics.length === 0
          ? api.metricNames(this.context.id, controller.signal).then((n) => n.validation)
          : Promise.resolve(this.metrics),
      ]);
      if (controller.signal.aborted) return live;
      this.metrics = names;
      this.message.replaceChildren();
      this.render(result.items, result.total, experiment);
    } catch (err) {
      if (!controller.signal.aborted)
        this.message.replaceChildren(notice(`Could not load the trials: ${errorMessage(err)}`));
    }
    return live;
  }

  /** The filter box of a column: `low..high` for a numeric one, `a, b` for values. */
  private filterBox(key: string, label: string, kind: "range" | "values"): HTMLInputElement {
    let box = this.filterBoxes.get(key);
    if (!box) {
      box = columnFilter({
        testId: `trials-filter-${key}`,
        label: `Filter ${label}${kind === "range" ? " (min..max)" : " (values, comma-separated)"}`,
        placeholder: kind === "range" ? "min..max" : "a, b",
        onChange: (text) => this.applyFilter(key, kind, text),
        attrs: { "data-filter-kind": kind },
      });
      this.filterBoxes.set(key, box);
      this.syncFilterBox(key, box);
    }
    return box;
  }

  private applyFilter(key: string, kind: "range" | "values", text: string): void {
    if (kind === "values") {
      setQuery({ value: withValues(this.state.values, key, splitValues(text)), page: null });
      return;
    }
    setQuery({ range: withRange(this.state.ranges, key, typedBounds(text)), page: null });
  }

  private syncFilterBoxes(): void {
    for (const [key, box] of this.filterBoxes) this.syncFilterBox(key, box);
  }

  private syncFilterBox(key: string, box: HTMLInputElement): void {
    if (document.activeElement === box) return;
    box.value =
      box.dataset.filterKind === "range"
        ? rangeText(parseRanges(this.state.ranges).get(key))
        : (parseValues(this.state.values).get(key) ?? []).join(", ");
  }

  private render(trials: Trial[], total: number, experiment: Experiment): void {
    const { page, sort } = this.state;
    this.rows = trials;
    this.count.textContent = `${formatInteger(total)} trial${total === 1 ? "" : "s"}`;
    const flat = new Map(trials.map((t) => [t.id, flattenHparams(t.hparams)]));
    // Constants of the config are the same in every row: left out (the Config tab has them).
    const declared = declaredTypes(experiment.config.hyperparameters);
    const configured = new Set(configuredHparams(experiment.config.hyperparameters));
    const hparams = [...new Set([...declared.keys(), ...hparamNames(trials)])].filter(
      (name) => declared.get(name) !== "const",
    );
    const now = Date.now();
    const range = (key: string, label: string) => this.filterBox(key, label, "range");
    const columns: Column<Trial>[] = [
      {
        label: "Select",
        cell: (t) =>
          h("input", {
            type: "checkbox",
            "data-testid": "select-trial",
            "aria-label": `Select trial ${t.id}`,
            checked: this.selected.has(t.id),
            onchange: (event: Event) => {
              if ((event.target as HTMLInputElement).checked) this.selected.add(t.id);
              else this.selected.delete(t.id);
              this.renderBulk();
            },
          }),
      },
      {
        label: "Trial",
        sortKey: "id",
        numeric: true,
        filter: range("id", "trial id"),
        cell: (t) => h("a", { href: href(`/trials/${t.id}`) }, String(t.id)),
      },
      {
        // The state, with the outcome beside it where the state hides it (one column: a
        // COMPLETED trial's "completed" outcome is not said twice) and an error's type.
        label: "State",
        sortKey: "state",
        filter: this.stateSelect,
        cell: (t) => {
          const badge = stateBadge(t.state, "trial-state", {
            kind: "trial",
            outcome: t.outcome,
            batches: t.total_batches,
          });
          if (!t.error) return badge;
          return h(
            "span",
            { class: "state-with-outcome" },
            badge,
            h("span", { class: "error-text", title: `${t.error.type}: ${t.error.message}` }, t.error.type),
          );
        },
      },
      {
        label: `${experiment.searcher_metric ?? "metric"} (best)`,
        sortKey: "best_validation",
        numeric: true,
        filter: range("best_validation", "best metric"),
        cell: (t) => h("span", { class: "metric" }, formatNumber(t.best_validation)),
      },
      {
        label: "Batches",
        sortKey: "total_batches",
        numeric: true,
        filter: range("total_batches", "batches"),
        cell: (t) => formatInteger(t.total_batches),
      },
      {
        label: "Restarts",
        sortKey: "restarts",
        numeric: true,
        filter: range("restarts", "restarts"),
        cell: (t) => formatInteger(t.restarts),
      },
      ...hparams.map((name): Column<Trial> => {
        const key = hparamKey(name);
        const numeric = isNumeric(declared.get(name), trials, flat, name);
        // The master sorts and filters by the hyperparameters the config declares only.
        const known = configured.has(name);
        return {
          label: name,
          sortKey: known ? key : undefined,
          numeric,
          className: "hparam",
          title: `Hyperparameter ${name}`,
          filter: known ? this.filterBox(key, `hyperparameter ${name}`, numeric ? "range" : "values") : null,
          cell: (t) => formatValue(flat.get(t.id)?.[name]),
        };
      }),
      ...this.metrics.map((name): Column<Trial> => {
        const key = metricKey(name);
        return {
          label: `${name} (latest)`,
          sortKey: key,
          numeric: true,
          className: "metric-column",
          title: `Validation metric ${name}: the trial's latest value (the Best column: its best ${experiment.searcher_metric ?? "searcher metric"})`,
          filter: range(key, `metric ${name}`),
          cell: (t) => h("span", { class: "metric" }, formatNumber(metricNumber(t.latest_validation?.[name]))),
        };
      }),
      {
        label: "Started",
        sortKey: "created_at",
        cell: (t) => formatTime(t.created_at),
      },
      {
        label: "Duration",
        sortKey: "duration",
        numeric: true,
        cell: (t) => formatDuration(elapsed(t.created_at, t.ended_at, now)),
      },
    ];
    const filtered = Boolean(this.state.state || this.state.ranges.length || this.state.values.length);
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
        empty: filtered ? "No trial matches these filters." : "No trials yet.",
      }),
    );
    this.pagerHost.replaceChildren(
      total > PAGE_SIZE || page > 1 ? pager(total, page, PAGE_SIZE, (p) => setQuery({ page: p > 1 ? p : null })) : "",
    );
  }

  private renderBulk(): void {
    const n = this.selected.size;
    this.bulk.replaceChildren(
      h("span", { class: "muted" }, `${n} selected:`),
      h(
        "button",
        {
          type: "button",
          class: "danger",
          disabled: n === 0,
          "data-testid": "bulk-kill-trials",
          onclick: () => void this.kill(),
        },
        "Kill",
      ),
      this.bulkMessage,
    );
  }

  /** Kill the ticked trials after asking; says which could not be killed and why (one that
   * has ended, or is being stopped, is named rather than asked). */
  private async kill(): Promise<void> {
    const ids = [...this.selected].sort((a, b) => a - b);
    const states = new Map(this.rows.map((t) => [t.id, t.state]));
    const ok = await confirmAction({
      title: `Kill ${ids.length} trial${ids.length === 1 ? "" : "s"}?`,
      message: `Trials ${ids.join(", ")} stop now, without a checkpoint; the searcher gives them no more work.`,
      confirmLabel: "Kill",
      danger: true,
    });
    if (!ok) return;
    const failed: string[] = [];
    for (const id of ids) {
      const state = states.get(id);
      if (state && !KILLABLE.has(state)) {
        failed.push(`${id}: it is ${formatState(state)}`);
        continue;
      }
      try {
        await api.killTrial(id);
        this.selected.delete(id);
      } catch (err) {
        failed.push(`${id}: ${errorMessage(err)}`);
      }
    }
    this.bulkMessage.textContent = failed.length
      ? `kill: ${ids.length - failed.length} done; failed: ${failed.join("; ")}`
      : `kill: ${ids.length} done.`;
    this.renderBulk();
    void this.load();
  }
}

/** Whether a hyperparameter column holds numbers (filtered by a range): declared int, double
 * or log, or undeclared with a number in a shown row. */
function isNumeric(
  declared: DeclaredType | undefined,
  trials: readonly Trial[],
  flat: Map<number, Record<string, unknown>>,
  name: string,
): boolean {
  if (declared === "int" || declared === "double" || declared === "log") return true;
  if (declared === "categorical") return false;
  return trials.some((t) => typeof flat.get(t.id)?.[name] === "number");
}
