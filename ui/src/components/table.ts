// An accessible data table: a real <table>, sortable headers are buttons (keyboard: Tab to a
// header, Enter or Space to sort) with aria-sort, an optional row of column filters under
// them, and a pager below it.

import { h } from "../dom";
import { formatInteger } from "../format";

export interface Column<T> {
  label: string;
  /** The server's sort key for this column; a column without one does not sort. */
  sortKey?: string;
  /** Numbers align right. */
  numeric?: boolean;
  className?: string;
  /** A longer explanation of the header (its title). */
  title?: string;
  /** The column's filter control, shown in a row below the headers. The caller keeps the
   * same node across refreshes (it moves into the new table), so what is typed survives. */
  filter?: Node | null;
  cell: (row: T) => Node | string;
}

/** A column's filter box (for `Column.filter`): a search input that calls `onChange` with
 * its text when the user commits it (Enter, or leaving the box). */
export function columnFilter(options: {
  testId: string;
  label: string;
  placeholder: string;
  onChange: (text: string) => void;
  attrs?: Record<string, string>;
}): HTMLInputElement {
  const input = h("input", {
    ...options.attrs,
    type: "search",
    class: "column-filter",
    "data-testid": options.testId,
    "aria-label": options.label,
    placeholder: options.placeholder,
    autocomplete: "off",
    onchange: () => options.onChange(input.value),
  });
  return input;
}

export interface TableOptions<T> {
  caption: string;
  columns: Column<T>[];
  testId?: string;
  rowTestId?: string;
  rowAttrs?: (row: T) => Record<string, string>;
  /** A stable key per row, so focus survives a refresh of the table. */
  rowKey?: (row: T) => string;
  /** Where a row leads (a click anywhere on the row goes there; its link is for keyboards). */
  rowHref?: (row: T) => string;
  /** `key` or `-key` (descending). */
  sort?: string;
  onSort?: (sort: string) => void;
  empty: string;
}

/** Parse `-key` into its key and direction. */
export function parseSort(sort: string | undefined): { key: string; descending: boolean } | null {
  if (!sort) return null;
  return sort.startsWith("-") ? { key: sort.slice(1), descending: true } : { key: sort, descending: false };
}

export function dataTable<T>(rows: readonly T[], options: TableOptions<T>): HTMLTableElement {
  const current = parseSort(options.sort);
  const head = h(
    "tr",
    {},
    options.columns.map((column) => {
      const th = h("th", {
        scope: "col",
        class: [column.numeric ? "num" : "", column.className ?? ""].join(" ").trim() || null,
        title: column.title ?? null,
      });
      if (column.sortKey && options.onSort) {
        const key = column.sortKey;
        const active = current?.key === key;
        th.setAttribute("aria-sort", active ? (current.descending ? "descending" : "ascending") : "none");
        const next = active && !current.descending ? `-${key}` : key;
        th.append(
          h(
            "button",
            {
              type: "button",
              class: "sort",
              "aria-label": `Sort by ${column.label}${active ? (current.descending ? ", sorted descending" : ", sorted ascending") : ""}`,
              onclick: () => options.onSort?.(next),
            },
            column.label,
            h("span", { class: "sort-mark", "aria-hidden": "true" }, active ? (current.descending ? "▼" : "▲") : "↕"),
          ),
        );
      } else {
        th.append(column.label);
      }
      return th;
    }),
  );

  const filters = options.columns.some((column) => column.filter)
    ? h(
        "tr",
        { class: "filter-row", "data-testid": "filter-row" },
        options.columns.map((column) => h("td", { class: column.numeric ? "num" : null }, column.filter ?? null)),
      )
    : null;

  const body = h("tbody");
  for (const row of rows) {
    const tr = h("tr", { "data-testid": options.rowTestId ?? null, "data-row-key": options.rowKey?.(row) ?? null });
    for (const [key, value] of Object.entries(options.rowAttrs?.(row) ?? {})) tr.setAttribute(key, value);
    const target = options.rowHref?.(row);
    if (target) {
      tr.classList.add("link-row");
      tr.addEventListener("click", (event) => {
        const clicked = event.target as HTMLElement;
        if (clicked.closest("a, button, input, select, textarea, label")) return;
        if (window.getSelection()?.toString()) return;
        location.hash = target;
      });
    }
    for (const column of options.columns) {
      const cls = [column.numeric ? "num" : "", column.className ?? ""].join(" ").trim();
      tr.append(h("td", { class: cls || null }, column.cell(row)));
    }
    body.append(tr);
  }
  if (rows.length === 0) {
    body.append(h("tr", {}, h("td", { colspan: options.columns.length, class: "empty" }, options.empty)));
  }

  return h(
    "table",
    { class: "data", "data-testid": options.testId ?? null },
    h("caption", { class: "visually-hidden" }, options.caption),
    h("thead", {}, head, filters),
    body,
  );
}

/** "Showing 51–100 of 1,234" and Previous/Next buttons; pages count from 1. */
export function pager(total: number, page: number, pageSize: number, onPage: (page: number) => void): HTMLElement {
  const pages = Math.max(1, Math.ceil(total / pageSize));
  const first = total === 0 ? 0 : (page - 1) * pageSize + 1;
  const last = Math.min(total, page * pageSize);
  return h(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    h(
      "span",
      { class: "muted" },
      total === 0 ? "None" : `${formatInteger(first)}–${formatInteger(last)} of ${formatInteger(total)}`,
    ),
    h(
      "button",
      { type: "button", disabled: page <= 1, onclick: () => onPage(page - 1), "aria-label": "Previous page" },
      "‹ Previous",
    ),
    h("span", { class: "muted" }, `Page ${formatInteger(page)} of ${formatInteger(pages)}`),
    h(
      "button",
      { type: "button", disabled: page >= pages, onclick: () => onPage(page + 1), "aria-label": "Next page" },
      "Next ›",
    ),
  );
}

/** Put `table` in `host` in place of the old one; whatever had the focus inside the old
 * table (a sort button, a row's link) has it in the new one, so polling never steals it. */
export function swapTable(host: HTMLElement, table: HTMLElement): void {
  const active = document.activeElement;
  let restore: (() => void) | null = null;
  if (active instanceof HTMLElement && host.contains(active)) {
    const cell = active.closest("td, th");
    const tr = cell?.parentElement;
    const section = tr?.parentElement?.tagName;
    if (cell && tr && section) {
      const col = (cell as HTMLTableCellElement).cellIndex;
      const key = tr.dataset.rowKey;
      const index = Array.prototype.indexOf.call(tr.parentElement?.children ?? [], tr) as number;
      restore = () => {
        const rows = table.querySelectorAll<HTMLTableRowElement>(`${section.toLowerCase()} > tr`);
        const row = key ? [...rows].find((r) => r.dataset.rowKey === key) : rows[index];
        const target = row?.cells[col]?.querySelector<HTMLElement>("a, button, input, [tabindex]");
        target?.focus();
      };
    }
  }
  host.replaceChildren(table);
  restore?.();
}
