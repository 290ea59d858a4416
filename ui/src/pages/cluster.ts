// The cluster: slots in use, the running trials and the queued ones with why they wait.

import { type Cluster, api } from "../api";
import { errorMessage, notice } from "../components/notice";
import { dataTable, swapTable } from "../components/table";
import { h } from "../dom";
import { formatInteger } from "../format";
import { Poller } from "../poll";
import { type Page, href } from "../router";

const POLL_MS = 3000;

export class ClusterPage implements Page {
  readonly el: HTMLElement;
  private readonly slots = h("div", { class: "slots", "data-testid": "cluster-slots" });
  private readonly running = h("div", { class: "table-wrap" });
  private readonly queued = h("div", { class: "table-wrap" });
  private readonly runningTitle = h("h2", {}, "Running");
  private readonly queuedTitle = h("h2", {}, "Queued");
  private readonly message = h("div");
  private readonly controller = new AbortController();
  private readonly poller = new Poller(() => this.load(), POLL_MS);

  constructor() {
    document.title = "Cluster · PEDL";
    this.el = h(
      "div",
      { class: "page" },
      h("div", { class: "page-head" }, h("h1", {}, "Cluster")),
      this.message,
      h("section", { class: "card" }, h("h2", {}, "Slots"), this.slots),
      h(
        "div",
        { class: "cards two" },
        h("section", { class: "card" }, this.runningTitle, this.running),
        h("section", { class: "card" }, this.queuedTitle, this.queued),
      ),
    );
    void this.load();
    this.poller.start();
  }

  update(): void {}

  dispose(): void {
    this.poller.stop();
    this.controller.abort();
  }

  private async load(): Promise<void> {
    try {
      this.render(await api.cluster(this.controller.signal));
      this.message.replaceChildren();
    } catch (err) {
      if (!this.controller.signal.aborted)
        this.message.replaceChildren(notice(`Could not load the cluster: ${errorMessage(err)}`));
    }
  }

  private render(cluster: Cluster): void {
    const { slots_used: used, slots_total: total } = cluster;
    const fraction = total > 0 ? used / total : 0;
    this.slots.dataset.slotsUsed = String(used);
    this.slots.dataset.slotsTotal = String(total);
    this.slots.replaceChildren(
      h(
        "p",
        { class: "slots-text" },
        h("strong", {}, formatInteger(used)),
        ` of ${formatInteger(total)} slot${total === 1 ? "" : "s"} in use`,
      ),
      h(
        "div",
        { class: "slot-cells", role: "img", "aria-label": `${used} of ${total} slots in use` },
        total <= 64
          ? Array.from({ length: total }, (_x, i) => h("span", { class: i < used ? "slot used" : "slot" }))
          : h(
              "div",
              { class: "progress-track" },
              h("div", { class: "progress-fill", style: `width: ${fraction * 100}%` }),
            ),
      ),
    );
    this.runningTitle.textContent = `Running (${formatInteger(cluster.running.length)})`;
    this.queuedTitle.textContent = `Queued (${formatInteger(cluster.queued.length)})`;
    swapTable(
      this.running,
      dataTable(cluster.running, {
        caption: "Running trials",
        columns: [
          {
            label: "Trial",
            numeric: true,
            cell: (r) => h("a", { href: href(`/trials/${r.trial_id}`) }, String(r.trial_id)),
          },
          {
            label: "Experiment",
            numeric: true,
            cell: (r) => h("a", { href: href(`/experiments/${r.experiment_id}`) }, String(r.experiment_id)),
          },
          { label: "Slots", numeric: true, cell: (r) => formatInteger(r.slots) },
        ],
        rowKey: (r) => String(r.trial_id),
        rowHref: (r) => href(`/trials/${r.trial_id}`),
        empty: "Nothing is running.",
      }),
    );
    swapTable(
      this.queued,
      dataTable(cluster.queued, {
        caption: "Queued trials",
        columns: [
          {
            label: "Trial",
            numeric: true,
            cell: (q) => h("a", { href: href(`/trials/${q.trial_id}`) }, String(q.trial_id)),
          },
          {
            label: "Experiment",
            numeric: true,
            cell: (q) => h("a", { href: href(`/experiments/${q.experiment_id}`) }, String(q.experiment_id)),
          },
          { label: "Why it waits", cell: (q) => q.reason ?? "—" },
        ],
        rowKey: (q) => String(q.trial_id),
        rowHref: (q) => href(`/trials/${q.trial_id}`),
        empty: "No trial is waiting.",
      }),
    );
  }
}
