// The cluster: slots in use, the running trials and the queued ones with why they wait, the
// workers kept ready for trials (a spare, an experiment's warm worker: each holds a slot while
// idle, and gives it up to a trial that needs a new process) and the TensorBoards the master
// runs.

import { type Cluster, type IdleWorker, type TensorBoard, api } from "../api";
import { errorMessage, notice } from "../components/notice";
import { dataTable, swapTable } from "../components/table";
import { h } from "../dom";
import { elapsed, formatDuration, formatInteger, formatState } from "../format";
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
  private readonly idle = h("div", { class: "table-wrap" });
  private readonly idleTitle = h("h2", {}, "Workers kept ready");
  private readonly boards = h("div", { class: "table-wrap" });
  private readonly boardsTitle = h("h2", {}, "TensorBoards");
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
      h(
        "div",
        { class: "cards two" },
        h(
          "section",
          { class: "card", "data-testid": "cluster-idle-workers" },
          this.idleTitle,
          h(
            "p",
            { class: "muted small" },
            "Python processes with the framework imported, waiting for a trial: each holds a slot " +
              "until a trial takes it, or gives it up to one that needs a new process.",
          ),
          this.idle,
        ),
        h("section", { class: "card", "data-testid": "cluster-tensorboards" }, this.boardsTitle, this.boards),
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
      const signal = this.controller.signal;
      const [cluster, boards] = await Promise.all([api.cluster(signal), api.tensorBoards(signal)]);
      this.render(cluster);
      this.renderIdle(cluster.idle_workers ?? []);
      this.renderBoards(boards);
      this.message.replaceChildren();
    } catch (err) {
      if (!this.controller.signal.aborted)
        this.message.replaceChildren(notice(`Could not load the cluster: ${errorMessage(err)}`));
    }
  }

  private render(cluster: Cluster): void {
    const { slots_used: used, slots_total: total } = cluster;
    const ready = cluster.idle_workers?.length ?? 0;
    const fraction = total > 0 ? used / total : 0;
    this.slots.dataset.slotsUsed = String(used);
    this.slots.dataset.slotsTotal = String(total);
    this.slots.replaceChildren(
      h(
        "p",
        { class: "slots-text" },
        h("strong", {}, formatInteger(used)),
        ` of ${formatInteger(total)} slot${total === 1 ? "" : "s"} in use`,
        ready > 0 ? `, ${formatInteger(ready)} held by ${ready === 1 ? "a worker" : "workers"} kept ready` : "",
      ),
      h(
        "div",
        { class: "slot-cells", role: "img", "aria-label": `${used} of ${total} slots in use` },
        total <= 64
          ? Array.from({ length: total }, (_x, i) =>
              h("span", { class: i < used ? "slot used" : i < used + ready ? "slot ready" : "slot" }),
            )
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
        rowTestId: "running-trial",
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

  private renderIdle(workers: IdleWorker[]): void {
    this.idleTitle.textContent = `Workers kept ready (${formatInteger(workers.length)})`;
    swapTable(
      this.idle,
      dataTable(workers, {
        caption: "Idle worker processes",
        columns: [
          { label: "Process", numeric: true, cell: (w) => String(w.pid) },
          {
            label: "For",
            cell: (w) =>
              w.experiment_id == null
                ? h(
                    "span",
                    { title: "It has run no trial: the first experiment without environment variables takes it." },
                    "Spare: any new experiment",
                  )
                : h(
                    "span",
                    {},
                    h("a", { href: href(`/experiments/${w.experiment_id}`) }, `Experiment ${w.experiment_id}`),
                    w.trial_id == null ? "" : ` (ran trial ${w.trial_id})`,
                  ),
          },
          { label: "Idle for", numeric: true, cell: (w) => formatDuration(elapsed(w.idle_since, null)) },
        ],
        rowKey: (w) => String(w.pid),
        rowTestId: "idle-worker",
        empty: "No worker is waiting: each trial starts a new process.",
      }),
    );
  }

  private renderBoards(boards: TensorBoard[]): void {
    const shown = boards.filter((b) => b.state !== "STOPPED");
    this.boardsTitle.textContent = `TensorBoards (${formatInteger(shown.length)})`;
    swapTable(
      this.boards,
      dataTable(shown, {
        caption: "TensorBoards the master runs",
        columns: [
          {
            label: "TensorBoard",
            cell: (b) =>
              b.state === "RUNNING" || b.state === "STARTING"
                ? h("a", { href: b.service_address, target: "_blank", rel: "noopener" }, b.id)
                : b.id,
          },
          {
            label: "Shows",
            cell: (b) =>
              b.experiment_ids.length > 0
                ? h(
                    "span",
                    {},
                    ...b.experiment_ids.flatMap((id, i) => [
                      i > 0 ? ", " : "",
                      h("a", { href: href(`/experiments/${id}`) }, `Experiment ${id}`),
                    ]),
                  )
                : `Trials ${b.trial_ids.join(", ")}`,
          },
          { label: "State", cell: (b) => (b.error ? `${formatState(b.state)}: ${b.error}` : formatState(b.state)) },
          { label: "Owner", cell: (b) => b.owner },
          { label: "Running for", numeric: true, cell: (b) => formatDuration(elapsed(b.created_at, null)) },
        ],
        rowKey: (b) => b.id,
        rowTestId: "tensorboard-row",
        empty: "No TensorBoard runs (an experiment's TensorBoard button starts one).",
      }),
    );
  }
}
