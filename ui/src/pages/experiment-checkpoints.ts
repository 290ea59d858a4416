// Checkpoints: every checkpoint of the experiment, best first (by the searcher metric) or in
// creation order, with its metric, size, state and a download link; paginated.

import { type Experiment, api } from "../api";
import { errorMessage, notice } from "../components/notice";
import { pager, swapTable } from "../components/table";
import { h } from "../dom";
import { formatInteger } from "../format";
import { Poller } from "../poll";
import { setQuery } from "../router";
import { checkpointTable, registrationsOf } from "./checkpoint-table";
import type { ExperimentContext, ExperimentTab } from "./experiment-context";

const PAGE_SIZE = 50;
const POLL_MS = 10000;

export class CheckpointsTab implements ExperimentTab {
  readonly el: HTMLElement;
  private sort: "best" | "created";
  private page: number;
  private readonly sortSelect: HTMLSelectElement;
  private readonly count = h("span", { class: "muted count", "aria-live": "polite" });
  private readonly tableHost = h("div", { class: "table-wrap" });
  private readonly pagerHost = h("div");
  private readonly message = h("div");
  private controller: AbortController | null = null;
  private readonly poller = new Poller(() => this.load(), POLL_MS);

  constructor(
    private readonly context: ExperimentContext,
    query: URLSearchParams,
  ) {
    this.sort = query.get("sort") === "created" ? "created" : "best";
    this.page = Math.max(1, Number(query.get("page")) || 1);
    this.sortSelect = h(
      "select",
      {
        id: "checkpoints-sort",
        onchange: () => setQuery({ sort: this.sortSelect.value === "best" ? null : this.sortSelect.value, page: null }),
      },
      h("option", { value: "best" }, "Best first"),
      h("option", { value: "created" }, "Oldest first"),
    );
    this.sortSelect.value = this.sort;
    this.el = h(
      "div",
      {},
      h(
        "form",
        { class: "filters", onsubmit: (e: Event) => e.preventDefault() },
        h("div", { class: "field" }, h("label", { for: "checkpoints-sort" }, "Order"), this.sortSelect),
        this.count,
      ),
      this.message,
      this.tableHost,
      this.pagerHost,
    );
    void this.load().then((live) => {
      if (live) this.poller.start();
    });
  }

  update(query: URLSearchParams): void {
    this.sort = query.get("sort") === "created" ? "created" : "best";
    this.page = Math.max(1, Number(query.get("page")) || 1);
    this.sortSelect.value = this.sort;
    void this.load();
  }

  dispose(): void {
    this.poller.stop();
    this.controller?.abort();
  }

  private async load(): Promise<boolean> {
    const live = this.context.live;
    this.controller?.abort();
    const controller = new AbortController();
    this.controller = controller;
    try {
      const [experiment, result]: [Experiment, Awaited<ReturnType<typeof api.experimentCheckpoints>>] =
        await Promise.all([
          this.context.ready,
          api.experimentCheckpoints(
            this.context.id,
            { sort: this.sort, limit: PAGE_SIZE, offset: (this.page - 1) * PAGE_SIZE },
            controller.signal,
          ),
        ]);
      const registered = await registrationsOf(result.items, controller.signal);
      if (controller.signal.aborted) return live;
      this.message.replaceChildren();
      this.count.textContent = `${formatInteger(result.total)} checkpoint${result.total === 1 ? "" : "s"}`;
      swapTable(
        this.tableHost,
        checkpointTable(result.items, experiment.searcher_metric, { showTrial: true, registered }),
      );
      this.pagerHost.replaceChildren(
        result.total > PAGE_SIZE || this.page > 1
          ? pager(result.total, this.page, PAGE_SIZE, (p) => setQuery({ page: p > 1 ? p : null }))
          : "",
      );
    } catch (err) {
      if (!controller.signal.aborted)
        this.message.replaceChildren(notice(`Could not load the checkpoints: ${errorMessage(err)}`));
    }
    return live;
  }
}
