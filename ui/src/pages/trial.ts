// The trial page: state and outcome, the error if it failed, restarts, hyperparameters, and
// three tabs (`?tab=`): metric charts, checkpoints, live logs. While the trial runs, the
// trial, its new metric rows and its new log lines are polled; polling stops once it ended.

import { type Experiment, type Trial, type TrialWorker, api, isTerminal } from "../api";
import { confirmAction } from "../components/dialog";
import { lineageNote } from "../components/pbt-lineage";
import { errorMessage, notice, toast } from "../components/notice";
import { outcomeNote, stateBadge } from "../components/state-badge";
import { dataTable, swapTable } from "../components/table";
import { tabBar, tabPanel } from "../components/tabs";
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
import { flattenHparams } from "../hparams";
import { Poller } from "../poll";
import { type Page, type Route, href } from "../router";
import { checkpointTable, registrationsOf } from "./checkpoint-table";
import { isNotFound, notFoundContent } from "./not-found";
import { TrialLogs } from "./trial-logs";
import { TrialMetrics } from "./trial-metrics";
import { TrialSystemMetrics } from "./trial-system";

const TABS = [
  { id: "overview", label: "Overview" },
  { id: "checkpoints", label: "Checkpoints" },
  { id: "logs", label: "Logs" },
] as const;
type TabId = (typeof TABS)[number]["id"];

const POLL_MS = 3000;
const LOG_POLL_MS = 2000;

function tabOf(query: URLSearchParams): TabId {
  const tab = query.get("tab");
  return (TABS.find((t) => t.id === tab)?.id ?? "overview") as TabId;
}

function fact(label: string, value: Node | string): HTMLElement[] {
  return [h("dt", {}, label), h("dd", {}, value)];
}

export class TrialPage implements Page {
  readonly el: HTMLElement;
  private trial: Trial | null = null;
  private experiment: Experiment | null = null;
  private tab: TabId;
  private readonly crumbs = h("nav", { class: "crumbs", "aria-label": "Breadcrumb" });
  private readonly title = h("h1", {});
  private readonly state = h("span", {});
  private readonly killButton: HTMLButtonElement;
  private readonly facts = h("dl", { class: "facts wide" });
  private readonly errorHost = h("div");
  private readonly message = h("div");
  private readonly tabsHost = h("div");
  private panel: HTMLElement;
  private readonly hparams = h("div", { class: "table-wrap" });
  private readonly workers = h("div", { class: "table-wrap" });
  private readonly workersCard = h("section", { class: "card", "data-testid": "trial-workers", hidden: true });
  private readonly checkpoints = h("div", { class: "table-wrap" });
  private readonly metrics: TrialMetrics;
  private readonly system: TrialSystemMetrics;
  private readonly logs: TrialLogs;
  private readonly controller = new AbortController();
  private readonly poller = new Poller(() => this.poll(), POLL_MS);
  private readonly logPoller = new Poller(() => this.pollLogs(), LOG_POLL_MS);
  private logsStarted = false;

  constructor(
    private readonly id: number,
    route: Route,
  ) {
    this.tab = tabOf(route.query);
    this.killButton = h(
      "button",
      {
        type: "button",
        class: "button danger-outline",
        "data-testid": "action-kill",
        disabled: true,
        onclick: () => void this.kill(),
      },
      "Kill trial",
    );
    this.metrics = new TrialMetrics(id, route.query.getAll("metric"), this.controller.signal);
    this.system = new TrialSystemMetrics(id, this.controller.signal);
    this.logs = new TrialLogs(id, route.query.get("q") ?? "", this.controller.signal);
    this.crumbs.append(h("a", { href: href("/experiments") }, "Experiments"), h("span", {}, `Trial ${id}`));
    this.panel = tabPanel(this.tab);
    this.el = h(
      "div",
      { class: "page" },
      this.crumbs,
      h(
        "div",
        { class: "exp-head" },
        h(
          "div",
          { class: "exp-title" },
          h("div", { class: "title-line" }, this.title, this.state),
          h("div", { class: "actions" }, this.killButton),
        ),
      ),
      this.message,
      this.errorHost,
      h("section", { class: "card" }, this.facts),
      this.workersCard,
      this.tabsHost,
      this.panel,
    );
    this.title.textContent = `Trial ${id}`;
    this.workersCard.append(h("h2", {}, "Workers"), this.workers);
    this.showTab();
    void this.start();
  }

  update(route: Route): void {
    if (this.controller.signal.aborted) return; // not found: nothing more to show
    const tab = tabOf(route.query);
    this.metrics.choose(route.query.getAll("metric"));
    this.logs.setQuery(route.query.get("q") ?? "");
    if (tab !== this.tab) {
      this.tab = tab;
      this.showTab();
    }
  }

  dispose(): void {
    this.poller.stop();
    this.logPoller.stop();
    this.controller.abort();
    this.metrics.dispose();
    this.system.dispose();
  }

  private get live(): boolean {
    return this.trial === null || !isTerminal(this.trial.state);
  }

  private async start(): Promise<void> {
    const signal = this.controller.signal;
    try {
      this.show(await api.trial(this.id, signal));
    } catch (err) {
      if (signal.aborted) return;
      if (isNotFound(err)) {
        // Deleted with its experiment, or a wrong address: a not-found page, not empty cards.
        this.dispose();
        this.el.replaceChildren(
          ...notFoundContent(`There is no trial ${this.id}: it was deleted, or the address is wrong.`),
        );
        return;
      }
      this.message.replaceChildren(notice(`Could not load trial ${this.id}: ${errorMessage(err)}`));
      return;
    }
    const trial = this.trial as Trial;
    try {
      this.experiment = await api.experiment(trial.experiment_id, signal);
    } catch {
      this.experiment = null;
    }
    this.showCrumbs(trial);
    this.show(trial);
    await Promise.all([
      this.metrics.load(this.experiment?.searcher_metric ?? null),
      this.system.load(),
      this.loadCheckpoints(),
      this.loadWorkers(),
    ]);
    if (this.live) this.poller.start();
  }

  private async poll(): Promise<boolean> {
    const wasLive = this.live;
    this.show(await api.trial(this.id, this.controller.signal));
    await Promise.all([
      this.metrics.poll(),
      this.system.poll(!this.live),
      this.loadWorkers(),
      this.tab === "checkpoints" ? this.loadCheckpoints() : Promise.resolve(),
    ]);
    return wasLive;
  }

  private async pollLogs(): Promise<boolean> {
    const wasLive = this.live;
    await this.logs.fetchNew();
    return wasLive;
  }

  private showTab(): void {
    const hadFocus = this.tabsHost.contains(document.activeElement);
    this.tabsHost.replaceChildren(
      tabBar(
        TABS.map((t) => ({
          id: t.id,
          label: t.label,
          href: href(`/trials/${this.id}`, t.id === "overview" ? {} : { tab: t.id }),
        })),
        this.tab,
        "Trial sections",
      ),
    );
    if (hadFocus) this.tabsHost.querySelector<HTMLElement>("[aria-selected=true]")?.focus();
    const panel = tabPanel(this.tab);
    if (this.tab === "overview") {
      panel.append(
        h(
          "div",
          { class: "trial-overview" },
          h("section", { class: "card" }, h("h2", {}, "Hyperparameters"), this.hparams),
          this.metrics.el,
          this.system.el,
        ),
      );
    } else if (this.tab === "checkpoints") {
      panel.append(h("section", { class: "card" }, h("h2", {}, "Checkpoints"), this.checkpoints));
      void this.loadCheckpoints();
    } else {
      panel.append(this.logs.el);
      if (!this.logsStarted) {
        this.logsStarted = true;
        void this.logs.fetchNew().then(() => {
          if (this.live) this.logPoller.start();
        });
      }
    }
    this.panel.replaceWith(panel);
    this.panel = panel;
  }

  private showCrumbs(trial: Trial): void {
    const name = this.experiment?.name
      ? `${this.experiment.name} (#${trial.experiment_id})`
      : `Experiment ${trial.experiment_id}`;
    this.crumbs.replaceChildren(
      h("a", { href: href("/experiments") }, "Experiments"),
      h("a", { href: href(`/experiments/${trial.experiment_id}`) }, name),
      h("a", { href: href(`/experiments/${trial.experiment_id}/trials`) }, "Trials"),
      h("span", { "aria-current": "page" }, `Trial ${trial.id}`),
    );
  }

  private show(trial: Trial): void {
    const first = this.trial === null;
    this.trial = trial;
    document.title = `Trial ${trial.id} · PEDL`;
    this.state.replaceChildren(
      stateBadge(trial.state, "trial-state", { kind: "trial", outcome: trial.outcome, batches: trial.total_batches }),
    );
    this.killButton.disabled = isTerminal(trial.state) || trial.state === "STOPPING_KILLED";
    this.system.setEnd(isTerminal(trial.state) ? (trial.ended_at ?? null) : null);
    this.logs.setLive(!isTerminal(trial.state));
    const metric = this.experiment?.searcher_metric ?? "metric";
    this.facts.replaceChildren(
      ...fact("State", formatState(trial.state)),
      // The outcome where the state does not say it already (as the state badge's note).
      ...(outcomeNote(trial.state, trial.outcome, trial.total_batches) === null
        ? []
        : fact("Outcome", outcomeNote(trial.state, trial.outcome, trial.total_batches) ?? EM_DASH)),
      ...fact("Batches", formatInteger(trial.total_batches)),
      ...fact(`Best ${metric}`, h("span", { class: "metric" }, formatNumber(trial.best_validation))),
      ...fact("Restarts", formatInteger(trial.restarts)),
      ...fact("Seed", String(trial.seed)),
      ...fact("Started", formatTime(trial.created_at)),
      ...fact("Duration", formatDuration(elapsed(trial.created_at, trial.ended_at))),
      ...fact(
        "Latest checkpoint",
        trial.latest_checkpoint_uuid
          ? h("span", { class: "mono", title: trial.latest_checkpoint_uuid }, trial.latest_checkpoint_uuid.slice(0, 8))
          : EM_DASH,
      ),
      ...fact(
        "Best checkpoint",
        trial.best_checkpoint_uuid
          ? h("span", { class: "mono", title: trial.best_checkpoint_uuid }, trial.best_checkpoint_uuid.slice(0, 8))
          : EM_DASH,
      ),
      ...(trial.parent_trial_id == null ? [] : fact("Copy of", lineageNote(trial))),
    );
    this.errorHost.replaceChildren(trial.error ? this.errorBox(trial) : "");
    if (first) {
      const rows = Object.entries(flattenHparams(trial.hparams));
      swapTable(
        this.hparams,
        dataTable(rows, {
          caption: "Hyperparameters",
          columns: [
            { label: "Name", className: "mono", cell: ([name]) => name },
            { label: "Value", cell: ([, value]) => formatValue(value) },
          ],
          empty: "No hyperparameters.",
        }),
      );
    }
  }

  private errorBox(trial: Trial): HTMLElement {
    const error = trial.error;
    if (!error) return h("div");
    return h(
      "section",
      { class: "card failure", "data-testid": "trial-error" },
      h("h2", {}, trial.state === "ERROR" ? "Why it failed" : "Latest error"),
      h(
        "p",
        {},
        h("strong", { class: "error-type" }, error.type),
        ": ",
        h("span", { class: "error-message" }, error.message),
      ),
      error.location ? h("p", { class: "muted" }, "at ", h("code", { class: "error-location" }, error.location)) : null,
      error.before_progress
        ? h("p", { class: "muted small" }, "It failed before training progressed, so it was not restarted.")
        : null,
      error.recurred
        ? h(
            "p",
            { class: "muted small" },
            `It failed again with the same error at the same batch (${error.batches ?? "?"}) after resuming exactly from its checkpoint, so it was not restarted.`,
          )
        : null,
      error.traceback
        ? h("details", {}, h("summary", {}, "Traceback"), h("pre", { class: "traceback" }, error.traceback))
        : null,
    );
  }

  /** The trial's worker processes (rank, pid, state, heartbeat age), shown when the master
   * runs or ran any for it. */
  private async loadWorkers(): Promise<void> {
    let rows: TrialWorker[];
    try {
      rows = await api.trialWorkers(this.id, this.controller.signal);
    } catch {
      return; // an older master, or a read failed: the rest of the page stays
    }
    this.workersCard.hidden = rows.length === 0;
    if (rows.length === 0) return;
    swapTable(
      this.workers,
      dataTable(rows, {
        caption: "Workers",
        columns: [
          { label: "Rank", cell: (w) => (w.rank === 0 && rows.length > 1 ? "0 (chief)" : String(w.rank)) },
          { label: "PID", className: "mono", cell: (w) => String(w.pid) },
          { label: "State", cell: (w) => (w.exit ? `${w.state} (${w.exit})` : w.state) },
          {
            label: "Heartbeat",
            cell: (w) => (w.heartbeat_age === null ? EM_DASH : `${w.heartbeat_age.toFixed(1)} s ago`),
          },
        ],
        empty: "No workers.",
      }),
    );
  }

  private async loadCheckpoints(): Promise<void> {
    try {
      const page = await api.trialCheckpoints(this.id, { limit: 1000, offset: 0 }, this.controller.signal);
      const registered = await registrationsOf(page.items, this.controller.signal);
      swapTable(
        this.checkpoints,
        checkpointTable(page.items, this.experiment?.searcher_metric ?? null, { showTrial: false, registered }),
      );
    } catch (err) {
      if (!this.controller.signal.aborted)
        this.checkpoints.replaceChildren(notice(`Could not load the checkpoints: ${errorMessage(err)}`));
    }
  }

  private async kill(): Promise<void> {
    const confirmed = await confirmAction({
      title: `Kill trial ${this.id}?`,
      message:
        "It stops at once, without a checkpoint, and is not restarted. Its experiment goes on with its other trials.",
      confirmLabel: "Kill trial",
      danger: true,
    });
    if (!confirmed) return;
    this.killButton.disabled = true;
    try {
      this.show(await api.killTrial(this.id));
      toast(`Trial ${this.id}: kill requested.`);
      this.poller.start();
    } catch (err) {
      toast(`Could not kill trial ${this.id}: ${errorMessage(err)}`, "error");
      if (this.trial) this.show(this.trial);
    }
  }
}
