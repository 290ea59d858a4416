// Every trial of an experiment from its trials summary (state, searcher metric, every
// hyperparameter), sorted and filtered in the page by any column, and narrowed further by
// the parallel coordinates' brushes. Rows can be selected (the URL keeps the selection) and
// compared side by side or killed together. The table sits below the charts: it is rendered
// only while it is near the viewport (within NEAR of it), else when it comes near, so loading
// the page does not build and lay out rows below the fold. New data is rendered once the
// browser is idle (the charts above come first); a change of sort, filter, brush or selection
// at once. The sort and the filters live in the URL: `tsort=<column>` (`-` descending) and
// `f.<column>=<filter>`.

import { type TrialsSummary, api } from "../api";
import { whenIdle } from "./search-charts";
import { h } from "../dom";
import { formatInteger, formatNumber, formatState, formatValue } from "../format";
import { href, navigate, setQuery } from "../router";
import type { Axis } from "./hp-axis";
import { confirmAction } from "./dialog";
import { stateBadge } from "./state-badge";
import { naturalCompare } from "../natural-order";

const SHOWN = 50;
/** How near the viewport (CSS pixels, above or below) the table is built. */
const NEAR = 800;
const MAX_SELECTED = 100;

/** Keeps trial i (summary order) or not; null: no brush. */
export type RowFilter = ((i: number) => boolean) | null;

interface TableColumn {
  key: string;
  label: string;
  numeric: boolean;
  value: (i: number) => unknown;
}

/** Whether `value` passes `filter`: `a..b` (inclusive), `>x`, `>=x`, `<x`, `<=x`, a number
 * (equal), or else a part of its text (any case). An empty filter passes everything. */
export function passes(value: unknown, filter: string): boolean {
  const text = filter.trim();
  if (!text) return true;
  const number = typeof value === "number" ? value : null;
  const range = /^(-?[\d.e+-]+)\s*\.\.\s*(-?[\d.e+-]+)$/i.exec(text);
  if (range) {
    const lo = Number(range[1]);
    const hi = Number(range[2]);
    if (Number.isFinite(lo) && Number.isFinite(hi)) return number != null && number >= lo && number <= hi;
  }
  const compare = /^(>=|<=|>|<)\s*(-?[\d.e+-]+)$/i.exec(text);
  if (compare && Number.isFinite(Number(compare[2]))) {
    if (number == null) return false;
    const bound = Number(compare[2]);
    switch (compare[1]) {
      case ">":
        return number > bound;
      case ">=":
        return number >= bound;
      case "<":
        return number < bound;
      default:
        return number <= bound;
    }
  }
  if (number != null && text !== "" && Number.isFinite(Number(text))) return number === Number(text);
  return formatValue(value).toLowerCase().includes(text.toLowerCase());
}

export class SummaryTable {
  readonly el: HTMLElement;
  private readonly count = h("p", { class: "muted small", "data-testid": "summary-count", "aria-live": "polite" });
  private readonly actions: HTMLElement;
  private readonly host = h("div", { class: "table-wrap" });
  private summary: TrialsSummary | null = null;
  private columns: TableColumn[] = [];
  private brush: RowFilter = null;
  private sort = "";
  private filters = new Map<string, string>();
  private selected = new Set<number>();
  private renderPending = false;
  /** Whether the table is near the viewport (always, without IntersectionObserver). */
  private near = typeof IntersectionObserver === "undefined";
  /** A render waits for the table to come near. */
  private stale = false;
  private readonly observer: IntersectionObserver | null = null;
  private readonly compareButton: HTMLButtonElement;
  private readonly killButton: HTMLButtonElement;

  constructor(
    query: URLSearchParams,
    private readonly onSelect: (ids: number[]) => void,
  ) {
    this.compareButton = h(
      "button",
      { type: "button", "data-testid": "compare-selected", onclick: () => this.compare() },
      "Compare selected",
    );
    this.killButton = h(
      "button",
      { type: "button", class: "danger", "data-testid": "kill-selected", onclick: () => void this.kill() },
      "Kill selected",
    );
    this.actions = h(
      "div",
      { class: "bulk-actions" },
      this.compareButton,
      this.killButton,
      h("button", { type: "button", onclick: () => this.select([]) }, "Clear selection"),
    );
    this.el = h("div", { class: "summary-table" }, this.count, this.actions, this.host);
    if (!this.near) {
      this.observer = new IntersectionObserver(
        (entries) => {
          // The latest state: while the charts above are still empty the table starts near.
          this.near = entries[entries.length - 1]?.isIntersecting ?? this.near;
          if (this.near && this.stale) this.render();
        },
        { rootMargin: `${NEAR}px 0px` },
      );
      this.observer.observe(this.el);
    }
    this.update(query);
  }

  dispose(): void {
    this.observer?.disconnect();
  }

  /** The URL changed: sort, filters and selection from it. */
  update(query: URLSearchParams): void {
    this.sort = query.get("tsort") ?? "";
    this.filters = new Map([...query.entries()].filter(([k]) => k.startsWith("f.")).map(([k, v]) => [k.slice(2), v]));
    this.selected = new Set(
      (query.get("selected") ?? "")
        .split(",")
        .map(Number)
        .filter((n) => Number.isInteger(n) && n > 0),
    );
    this.render();
  }

  setData(
    summary: TrialsSummary,
    axes: readonly Axis[],
    metric: Axis,
    smallerIsBetter: boolean,
    brush: RowFilter = null,
  ): void {
    this.summary = summary;
    this.brush = brush;
    const better = smallerIsBetter ? "lower" : "higher";
    this.columns = [
      { key: "id", label: "Trial", numeric: true, value: (i) => summary.trial_ids[i] },
      { key: "state", label: "State", numeric: false, value: (i) => summary.states[i] },
      {
        key: "metric",
        label: `${metric.name} (${better} is better)`,
        numeric: true,
        value: (i) => summary.best_validation[i],
      },
      ...Object.keys(summary.hparams)
        .filter((name) => axes.some((a) => a.name === name))
        .map((name): TableColumn => ({
          key: `hp.${name}`,
          label: name,
          numeric: (summary.hparams[name] ?? []).some((v) => typeof v === "number"),
          value: (i) => summary.hparams[name]?.[i],
        })),
    ];
    if (this.renderPending) return;
    this.renderPending = true;
    whenIdle(() => this.render());
  }

  /** The parallel coordinates' brushes changed. */
  setFilter(filter: RowFilter): void {
    this.brush = filter;
    this.render();
  }

  private rows(): number[] {
    const summary = this.summary;
    if (!summary) return [];
    let rows = summary.trial_ids.map((_id, i) => i);
    if (this.brush) rows = rows.filter(this.brush);
    for (const [key, filter] of this.filters) {
      const column = this.columns.find((c) => c.key === key);
      if (column) rows = rows.filter((i) => passes(column.value(i), filter));
    }
    const descending = this.sort.startsWith("-");
    const column = this.columns.find((c) => c.key === this.sort.replace(/^-/, ""));
    if (column) {
      const sign = descending ? -1 : 1;
      rows.sort((a, b) => {
        const va = column.value(a);
        const vb = column.value(b);
        if (va == null || vb == null) return va == null ? (vb == null ? a - b : 1) : -1; // none last
        if (typeof va === "number" && typeof vb === "number") return sign * (va - vb) || a - b;
        return sign * naturalCompare(formatValue(va), formatValue(vb)) || a - b;
      });
    }
    return rows;
  }

  private render(): void {
    this.renderPending = false;
    const summary = this.summary;
    if (!summary) return;
    this.stale = !this.near;
    if (this.stale) return;
    const rows = this.rows();
    const shown = rows.slice(0, SHOWN);
    const total = summary.trial_ids.length;
    this.count.textContent = `${formatInteger(rows.length)} of ${formatInteger(total)} trials${rows.length > SHOWN ? ` (the first ${SHOWN} shown)` : ""}; ${this.selected.size} selected.`;
    this.count.dataset.count = String(rows.length);
    this.compareButton.disabled = this.selected.size < 2;
    this.killButton.disabled = this.selected.size === 0;
    const head = h(
      "tr",
      {},
      h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Select")),
      this.columns.map((column) => {
        const active = this.sort.replace(/^-/, "") === column.key;
        const descending = active && this.sort.startsWith("-");
        return h(
          "th",
          {
            scope: "col",
            class: column.numeric ? "num" : null,
            "aria-sort": active ? (descending ? "descending" : "ascending") : "none",
          },
          h(
            "button",
            {
              type: "button",
              class: "sort",
              "data-testid": `sort-${column.key}`,
              onclick: () =>
                setQuery({ tsort: active && !descending ? `-${column.key}` : column.key }, { replace: true }),
            },
            column.label,
            h("span", { class: "sort-mark", "aria-hidden": "true" }, active ? (descending ? "▼" : "▲") : "↕"),
          ),
        );
      }),
    );
    const filterRow = h(
      "tr",
      { class: "filter-row" },
      h("td"),
      this.columns.map((column) =>
        h(
          "td",
          {},
          h("input", {
            type: "search",
            class: "column-filter",
            "data-testid": `filter-${column.key}`,
            "aria-label": `Filter ${column.label}`,
            placeholder: column.numeric ? "a..b, >x" : "filter",
            value: this.filters.get(column.key) ?? "",
            onchange: (event: Event) =>
              setQuery(
                { [`f.${column.key}`]: (event.target as HTMLInputElement).value.trim() || null },
                { replace: true },
              ),
          }),
        ),
      ),
    );
    const body = h(
      "tbody",
      {},
      shown.map((i) => {
        const id = summary.trial_ids[i] as number;
        return h(
          "tr",
          { "data-testid": "summary-row", "data-trial-id": id },
          h(
            "td",
            {},
            h("input", {
              type: "checkbox",
              "data-testid": "select-trial",
              "aria-label": `Select trial ${id}`,
              checked: this.selected.has(id),
              onchange: (event: Event) => {
                const next = new Set(this.selected);
                if ((event.target as HTMLInputElement).checked) next.add(id);
                else next.delete(id);
                this.select([...next]);
              },
            }),
          ),
          this.columns.map((column) => {
            const value = column.value(i);
            let cell: Node | string;
            if (column.key === "id") cell = h("a", { href: href(`/trials/${id}`) }, String(id));
            else if (column.key === "state") cell = stateBadge(String(value), undefined, { kind: "trial" });
            else cell = typeof value === "number" ? formatNumber(value) : formatValue(value);
            return h("td", { class: column.numeric ? "num" : null, "data-column": column.key }, cell);
          }),
        );
      }),
    );
    if (shown.length === 0)
      body.append(
        h("tr", {}, h("td", { colspan: this.columns.length + 1, class: "empty" }, "No trial passes the filters.")),
      );
    this.host.replaceChildren(
      h(
        "table",
        { class: "data", "data-testid": "summary-table" },
        h("caption", { class: "visually-hidden" }, "Trials of the experiment"),
        h("thead", {}, head, filterRow),
        body,
      ),
    );
  }

  private select(ids: number[]): void {
    this.selected = new Set(ids.slice(0, MAX_SELECTED));
    this.onSelect([...this.selected].sort((a, b) => a - b));
    this.render();
  }

  private compare(): void {
    navigate("/compare", { trials: [...this.selected].sort((a, b) => a - b).join(",") });
  }

  private async kill(): Promise<void> {
    const ids = [...this.selected].sort((a, b) => a - b);
    const states = new Map(this.summary?.trial_ids.map((id, i) => [id, this.summary?.states[i]]) ?? []);
    const ok = await confirmAction({
      title: `Kill ${ids.length} trial${ids.length === 1 ? "" : "s"}?`,
      message: `Trials ${ids.join(", ")} stop now (${ids.map((id) => formatState(String(states.get(id) ?? ""))).join(", ")}).`,
      confirmLabel: "Kill",
      danger: true,
    });
    if (!ok) return;
    const failed: string[] = [];
    for (const id of ids) {
      try {
        await api.killTrial(id);
      } catch (err) {
        failed.push(`trial ${id}: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    this.count.textContent = failed.length ? `Could not kill ${failed.join("; ")}` : `Killed ${ids.length} trials.`;
  }
}
