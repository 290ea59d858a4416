// The experiment list: filter by state, name, description, owner, label and project, and by ranges of
// id, progress, best metric, start and duration (the boxes under the headers), sort by any
// column, page through, act on the ticked rows; the filters and the sort live in the URL. The
// page refreshes itself every few seconds (one page of rows, never more).

import {
  type Experiment,
  type ExperimentAction,
  type ExperimentQuery,
  type ExperimentState,
  EXPERIMENT_STATES,
  api,
} from "../api";
import { confirmAction } from "../components/dialog";
import { errorMessage, notice } from "../components/notice";
import { progressBar } from "../components/progress";
import { stateBadge } from "../components/state-badge";
import { type Column, columnFilter, dataTable, pager, swapTable } from "../components/table";
import { debounce, h } from "../dom";
import { type ExperimentRangeColumn, experimentRangeText, withExperimentRange } from "../experiment-filters";
import { EM_DASH, elapsed, formatDuration, formatInteger, formatNumber, formatState, formatTime } from "../format";
import { Poller } from "../poll";
import { type Page, type Route, href, setQuery } from "../router";
import { workspacesApi } from "../workspaces";
import { labelChip } from "./labels";

const PAGE_SIZE = 50;
const DEFAULT_SORT = "-id";
const POLL_MS = 5000;
/** Labels shown in a row; the others are counted ("+2", listed in its tooltip). */
const SHOWN_LABELS = 2;

interface ListState {
  state: ExperimentState | "";
  name: string;
  description: string;
  owner: string;
  labels: string[];
  /** `COLUMN:LOW..HIGH`, as the API takes them. */
  ranges: string[];
  sort: string;
  page: number;
  archived: boolean;
  /** Only this project's experiments (its id), or every project's. */
  project: number | null;
}

function readState(query: URLSearchParams): ListState {
  const state = query.get("state") ?? "";
  return {
    state: (EXPERIMENT_STATES as readonly string[]).includes(state) ? (state as ExperimentState) : "",
    name: query.get("name") ?? "",
    description: query.get("description") ?? "",
    owner: query.get("owner") ?? "",
    labels: query.getAll("label").filter(Boolean),
    ranges: query.getAll("range").filter(Boolean),
    sort: query.get("sort") || DEFAULT_SORT,
    page: Math.max(1, Number.parseInt(query.get("page") ?? "1", 10) || 1),
    archived: query.get("archived") === "1",
    project: Number.parseInt(query.get("project") ?? "", 10) || null,
  };
}

export class ExperimentListPage implements Page {
  readonly el: HTMLElement;
  private readonly stateSelect: HTMLSelectElement;
  private readonly nameInput: HTMLInputElement;
  private readonly descriptionInput: HTMLInputElement;
  private readonly ownerInput: HTMLInputElement;
  private readonly projectSelect: HTMLSelectElement;
  private readonly labelInput: HTMLInputElement;
  private readonly labelFilters: HTMLElement;
  private readonly archivedBox: HTMLInputElement;
  private readonly count: HTMLElement;
  private readonly tableHost: HTMLElement;
  private readonly pagerHost: HTMLElement;
  private readonly message: HTMLElement;
  private state: ListState;
  /** The rows ticked for a bulk action (kept across polls and pages). */
  private readonly selected = new Set<number>();
  private rows: Experiment[] = [];
  private readonly bulk = h("div", { class: "bulk-actions", "data-testid": "bulk-actions" });
  private readonly bulkMessage = h("span", { class: "muted", "aria-live": "polite", "data-testid": "bulk-message" });
  private controller: AbortController | null = null;
  private readonly poller = new Poller(() => this.load(), POLL_MS);
  /** The filter boxes under the headers, kept across renders (so typing is never lost). */
  private readonly rangeBoxes = new Map<ExperimentRangeColumn, HTMLInputElement>();

  constructor(route: Route) {
    this.state = readState(route.query);
    this.stateSelect = h(
      "select",
      { id: "filter-state", onchange: () => setQuery({ state: this.stateSelect.value, page: null }) },
      h("option", { value: "" }, "All states"),
      EXPERIMENT_STATES.map((s) => h("option", { value: s }, formatState(s))),
    );
    // Typing goes into one history entry: the first change pushes one, the next ones rewrite it.
    const textFilter = (key: "name" | "description" | "owner", placeholder: string): HTMLInputElement => {
      const changed = debounce(
        () => setQuery({ [key]: input.value.trim(), page: null }, { replace: this.state[key] !== "" }),
        250,
      );
      const input = h("input", {
        id: `filter-${key}`,
        type: "search",
        placeholder,
        autocomplete: "off",
        oninput: () => changed(),
      });
      return input;
    };
    this.nameInput = textFilter("name", "Part of the name");
    this.descriptionInput = textFilter("description", "Part of the description");
    this.ownerInput = textFilter("owner", "Part of the owner's name");
    this.labelInput = h("input", {
      id: "filter-label",
      type: "text",
      placeholder: "Label, then Enter",
      autocomplete: "off",
      onkeydown: (e: Event) => {
        if ((e as KeyboardEvent).key !== "Enter") return;
        e.preventDefault();
        this.addLabelFilter(this.labelInput.value.trim());
        this.labelInput.value = "";
      },
    });
    this.labelFilters = h("div", { class: "chips", "aria-label": "Label filters" });
    this.archivedBox = h("input", {
      id: "filter-archived",
      type: "checkbox",
      "data-testid": "filter-archived",
      onchange: () => setQuery({ archived: this.archivedBox.checked ? "1" : null, page: null }),
    });
    this.projectSelect = h(
      "select",
      {
        id: "filter-project",
        "data-testid": "filter-project",
        onchange: () => setQuery({ project: this.projectSelect.value || null, page: null }),
      },
      h("option", { value: "" }, "All projects"),
    );
    void this.loadProjects();
    this.count = h("span", { class: "muted count", "aria-live": "polite" });
    this.tableHost = h("div", { class: "table-wrap" });
    this.pagerHost = h("div");
    this.message = h("div");
    this.el = h(
      "div",
      { class: "page" },
      h("div", { class: "page-head" }, h("h1", {}, "Experiments"), this.count),
      h(
        "form",
        { class: "filters", role: "search", onsubmit: (e: Event) => e.preventDefault() },
        h("div", { class: "field" }, h("label", { for: "filter-state" }, "State"), this.stateSelect),
        h("div", { class: "field grow" }, h("label", { for: "filter-name" }, "Name"), this.nameInput),
        h(
          "div",
          { class: "field grow" },
          h("label", { for: "filter-description" }, "Description"),
          this.descriptionInput,
        ),
        h("div", { class: "field" }, h("label", { for: "filter-owner" }, "Owner"), this.ownerInput),
        h("div", { class: "field" }, h("label", { for: "filter-project" }, "Project"), this.projectSelect),
        h("div", { class: "field" }, h("label", { for: "filter-label" }, "Label"), this.labelInput),
        h("label", { class: "check", for: "filter-archived" }, this.archivedBox, " Archived too"),
        this.labelFilters,
      ),
      this.message,
      this.bulk,
      this.tableHost,
      this.pagerHost,
    );
    this.renderBulk();
    this.syncControls();
    void this.load();
    this.poller.start();
  }

  update(route: Route): void {
    this.state = readState(route.query);
    this.syncControls();
    void this.load();
  }

  dispose(): void {
    this.poller.stop();
    this.controller?.abort();
  }

  private syncControls(): void {
    this.stateSelect.value = this.state.state;
    this.archivedBox.checked = this.state.archived;
    this.projectSelect.value = this.state.project === null ? "" : String(this.state.project);
    for (const [input, value] of [
      [this.nameInput, this.state.name],
      [this.descriptionInput, this.state.description],
      [this.ownerInput, this.state.owner],
    ] as const)
      if (document.activeElement !== input) input.value = value;
    for (const [column, box] of this.rangeBoxes)
      if (document.activeElement !== box) box.value = experimentRangeText(this.state.ranges, column);
    this.labelFilters.replaceChildren(
      ...this.state.labels.map((label) =>
        labelChip(label, {
          removeLabel: `Remove the label filter ${label}`,
          onRemove: () => setQuery({ label: this.state.labels.filter((l) => l !== label), page: null }),
        }),
      ),
    );
  }

  /** The project filter's choices: every project, named "workspace / project". */
  private async loadProjects(): Promise<void> {
    try {
      const projects = await workspacesApi.projects();
      this.projectSelect.replaceChildren(
        h("option", { value: "" }, "All projects"),
        ...projects.map((p) => h("option", { value: String(p.id) }, `${p.workspace_name} / ${p.name}`)),
      );
      this.projectSelect.value = this.state.project === null ? "" : String(this.state.project);
    } catch {
      // The filter keeps "All projects"; the list itself says what is wrong.
    }
  }

  private addLabelFilter(label: string): void {
    if (!label || this.state.labels.includes(label)) return;
    setQuery({ label: [...this.state.labels, label], page: null });
  }

  private async load(): Promise<void> {
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    const { state, name, description, owner, labels, ranges, sort, page, archived, project } = this.state;
    try {
      const query: ExperimentQuery & { project_id?: number } = {
        state: state ? [state] : undefined,
        name: name || undefined,
        description: description || undefined,
        owner: owner || undefined,
        label: labels,
        range: ranges,
        sort,
        archived: archived ? undefined : false,
        limit: PAGE_SIZE,
        offset: (page - 1) * PAGE_SIZE,
        ...(project === null ? {} : { project_id: project }),
      };
      const result = await api.experiments(query, controller.signal);
      if (controller.signal.aborted) return;
      this.message.replaceChildren();
      this.render(result.items, result.total);
    } catch (err) {
      if (controller.signal.aborted) return;
      this.message.replaceChildren(notice(`Could not load the experiments: ${errorMessage(err)}`));
    }
  }

  private render(rows: Experiment[], total: number): void {
    const { page } = this.state;
    this.count.textContent = `${formatInteger(total)} experiment${total === 1 ? "" : "s"}`;
    const now = Date.now();
    this.rows = rows;
    const columns: Column<Experiment>[] = [
      {
        label: "Select",
        cell: (e) =>
          h("input", {
            type: "checkbox",
            "data-testid": "select-experiment",
            "aria-label": `Select experiment ${e.id}`,
            checked: this.selected.has(e.id),
            onchange: (event: Event) => {
              if ((event.target as HTMLInputElement).checked) this.selected.add(e.id);
              else this.selected.delete(e.id);
              this.renderBulk();
            },
          }),
      },
      {
        label: "ID",
        sortKey: "id",
        numeric: true,
        filter: this.rangeBox("id", "ID", "min..max"),
        cell: (e) => h("a", { href: href(`/experiments/${e.id}`) }, String(e.id)),
      },
      {
        label: "Name",
        sortKey: "name",
        className: "name",
        cell: (e) => h("a", { href: href(`/experiments/${e.id}`) }, e.name ?? `Experiment ${e.id}`),
      },
      {
        label: "Description",
        sortKey: "description",
        className: "description",
        cell: (e) =>
          e.description ? h("span", { title: e.description }, e.description) : h("span", { class: "muted" }, EM_DASH),
      },
      {
        label: "Labels",
        sortKey: "labels",
        title: "Sorted by each experiment's alphabetically first label",
        className: "labels",
        cell: (e) => {
          const shown = e.labels.slice(0, SHOWN_LABELS);
          const rest = e.labels.slice(SHOWN_LABELS);
          return h(
            "div",
            { class: "chips" },
            shown.map((label) =>
              labelChip(label, { onSelect: () => this.addLabelFilter(label), selectLabel: `Filter by label ${label}` }),
            ),
            rest.length > 0 ? h("span", { class: "chip more", title: rest.join(", ") }, `+${rest.length}`) : null,
          );
        },
      },
      { label: "State", sortKey: "state", cell: (e) => stateBadge(e.state, "experiment-state") },
      {
        label: "Progress",
        sortKey: "progress",
        className: "progress-cell",
        filter: this.rangeBox("progress", "progress", "50%..100%"),
        cell: (e) => progressBar(e.progress, e.state),
      },
      {
        label: "Best metric",
        sortKey: "best_validation",
        numeric: true,
        filter: this.rangeBox("best_validation", "best metric", "min..max"),
        title: "The best searcher-metric value validated so far",
        cell: (e) =>
          h(
            "span",
            { class: "metric" },
            formatNumber(e.best_validation),
            e.searcher_metric ? h("span", { class: "muted small metric-name" }, e.searcher_metric) : null,
          ),
      },
      { label: "Owner", sortKey: "owner", cell: (e) => e.owner },
      {
        label: "Started",
        sortKey: "created_at",
        filter: this.rangeBox("created_at", "start (dates)", "2026-01-31.."),
        cell: (e) => h("time", { datetime: e.created_at, title: e.created_at }, formatTime(e.created_at)),
      },
      {
        label: "Duration",
        sortKey: "duration",
        numeric: true,
        filter: this.rangeBox("duration", "duration", "10m..2h"),
        cell: (e) => formatDuration(elapsed(e.created_at, e.ended_at, now)),
      },
    ];
    swapTable(
      this.tableHost,
      dataTable(rows, {
        caption: "Experiments",
        columns,
        testId: "experiments-table",
        rowTestId: "experiment-row",
        rowAttrs: (e) => ({ "data-experiment-id": String(e.id) }),
        rowKey: (e) => String(e.id),
        rowHref: (e) => href(`/experiments/${e.id}`),
        sort: this.state.sort,
        onSort: (sort) => setQuery({ sort: sort === DEFAULT_SORT ? null : sort, page: null }),
        empty: this.hasFilters()
          ? "No experiment matches these filters."
          : "No experiments yet: create one with `pedl experiment create`.",
      }),
    );
    this.pagerHost.replaceChildren(
      total > PAGE_SIZE || page > 1 ? pager(total, page, PAGE_SIZE, (p) => setQuery({ page: p > 1 ? p : null })) : "",
    );
  }

  private renderBulk(): void {
    const n = this.selected.size;
    const button = (label: string, run: () => void, danger = false) =>
      h(
        "button",
        {
          type: "button",
          class: danger ? "danger" : null,
          disabled: n === 0,
          "data-testid": `bulk-${label.toLowerCase().replace(/\s+/g, "-")}`,
          onclick: run,
        },
        label,
      );
    const act = (action: ExperimentAction) => () => void this.runBulk(action, (id) => api.experimentAction(id, action));
    this.bulk.replaceChildren(
      h("span", { class: "muted" }, `${n} selected:`),
      button("Pause", act("pause")),
      button("Activate", act("activate")),
      button("Kill", act("kill"), true),
      button("Archive", act("archive")),
      button("Unarchive", act("unarchive")),
      button("Add label", () => void this.addLabel()),
      button("Delete", () => void this.runBulk("delete", (id) => api.deleteExperiment(id)), true),
      this.bulkMessage,
    );
  }

  private async addLabel(): Promise<void> {
    const label = window.prompt("Label to add to the selected experiments")?.trim();
    if (!label) return;
    const labels = new Map(this.rows.map((e) => [e.id, e.labels]));
    await this.runBulk("label", (id) => {
      const current = labels.get(id) ?? [];
      return api.patchExperiment(id, { labels: current.includes(label) ? current : [...current, label] });
    });
  }

  /** Run `call` on every selected experiment (after asking, for kill and delete); says what
   * failed and why, per experiment. */
  private async runBulk(name: string, call: (id: number) => Promise<unknown>): Promise<void> {
    const ids = [...this.selected].sort((a, b) => a - b);
    if (name === "kill" || name === "delete") {
      const ok = await confirmAction({
        title: `${name === "kill" ? "Kill" : "Delete"} ${ids.length} experiment${ids.length === 1 ? "" : "s"}?`,
        message: `Experiments ${ids.join(", ")}${name === "delete" ? " and their checkpoints are deleted for good" : " stop now"}.`,
        confirmLabel: name === "kill" ? "Kill" : "Delete",
        danger: true,
      });
      if (!ok) return;
    }
    const failed: string[] = [];
    for (const id of ids) {
      try {
        await call(id);
      } catch (err) {
        failed.push(`${id}: ${errorMessage(err)}`);
      }
    }
    if (name === "delete" || name === "archive")
      for (const id of ids) if (!failed.some((f) => f.startsWith(`${id}:`))) this.selected.delete(id);
    this.bulkMessage.textContent = failed.length
      ? `${name}: ${ids.length - failed.length} done; failed: ${failed.join("; ")}`
      : `${name}: ${ids.length} done.`;
    this.renderBulk();
    void this.load();
  }

  /** The filter box under `column`'s header: `low..high` in the units its column shows. */
  private rangeBox(column: ExperimentRangeColumn, label: string, placeholder: string): HTMLInputElement {
    let box = this.rangeBoxes.get(column);
    if (!box) {
      box = columnFilter({
        testId: `experiments-filter-${column}`,
        label: `Filter by ${label} (low..high, either end may be left out)`,
        placeholder,
        onChange: (text) => setQuery({ range: withExperimentRange(this.state.ranges, column, text), page: null }),
      });
      box.value = experimentRangeText(this.state.ranges, column);
      this.rangeBoxes.set(column, box);
    }
    return box;
  }

  private hasFilters(): boolean {
    const { state, name, description, owner, labels, ranges } = this.state;
    return Boolean(state || name || description || owner || labels.length || ranges.length);
  }
}
