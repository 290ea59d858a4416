// The experiment page: its header (state, progress, actions, description and labels) and
// five tabs, each its own module. The tab is the URL's path (#/experiments/12/trials), the
// rest of the tab's state its query.

import { type Experiment, type ExperimentAction, type ExperimentState, api } from "../api";
import { confirmAction } from "../components/dialog";
import { errorMessage, notice, toast } from "../components/notice";
import { progressBar } from "../components/progress";
import { stateBadge } from "../components/state-badge";
import { tabBar, tabPanel } from "../components/tabs";
import { h } from "../dom";
import { elapsed, formatDuration, formatNumber, formatTime } from "../format";
import { Poller } from "../poll";
import { type Page, type Route, href, navigate } from "../router";
import { CheckpointsTab } from "./experiment-checkpoints";
import { ConfigTab } from "./experiment-config";
import { ExperimentContext, type ExperimentTab } from "./experiment-context";
import { OverviewTab } from "./experiment-overview";
import { TrialsTab } from "./experiment-trials";
import { VisualizationTab } from "./experiment-visualization";
import { ExperimentNotes } from "./labels";
import { isNotFound, notFoundContent } from "./not-found";

const TABS = [
  { id: "overview", label: "Overview" },
  { id: "visualization", label: "Visualization" },
  { id: "trials", label: "Trials" },
  { id: "checkpoints", label: "Checkpoints" },
  { id: "config", label: "Config" },
] as const;
type TabId = (typeof TABS)[number]["id"];

const POLL_MS = 3000;

interface ActionDef {
  action: ExperimentAction;
  label: string;
  allowed: readonly ExperimentState[];
  confirm?: { title: string; message: string; confirmLabel: string };
}

const ACTIONS: ActionDef[] = [
  { action: "pause", label: "Pause", allowed: ["ACTIVE"] },
  { action: "activate", label: "Activate", allowed: ["PAUSED"] },
  {
    action: "cancel",
    label: "Cancel",
    allowed: ["ACTIVE", "PAUSED"],
    confirm: {
      title: "Cancel this experiment?",
      message: "Its trials checkpoint and stop, and the search ends. A canceled experiment cannot be resumed.",
      confirmLabel: "Cancel experiment",
    },
  },
  {
    action: "kill",
    label: "Kill",
    allowed: ["ACTIVE", "PAUSED", "STOPPING_CANCELED"],
    confirm: {
      title: "Kill this experiment?",
      message:
        "Its trials stop at once, without a checkpoint: work since their last checkpoint is lost. This cannot be undone.",
      confirmLabel: "Kill experiment",
    },
  },
  { action: "archive", label: "Archive", allowed: ["COMPLETED", "CANCELED", "ERROR"] },
  { action: "unarchive", label: "Unarchive", allowed: ["COMPLETED", "CANCELED", "ERROR"] },
];

const ENDED: readonly ExperimentState[] = ["COMPLETED", "CANCELED", "ERROR"];

function tabOf(route: Route): TabId {
  const segment = route.path.split("/")[3] ?? "overview";
  return (TABS.find((t) => t.id === segment)?.id ?? "overview") as TabId;
}

export class ExperimentPage implements Page {
  readonly el: HTMLElement;
  private readonly context: ExperimentContext;
  private readonly head: HTMLElement;
  private readonly tabsHost: HTMLElement;
  private readonly message: HTMLElement;
  private panel: HTMLElement;
  private notes: ExperimentNotes | null = null;
  private tab: { id: TabId; view: ExperimentTab } | null = null;
  private readonly buttons = new Map<ExperimentAction, HTMLButtonElement>();
  private deleteButton: HTMLButtonElement | null = null;
  private tensorBoardButton: HTMLButtonElement | null = null;
  private readonly controller = new AbortController();
  private gone = false;
  private readonly poller = new Poller(() => this.refresh(), POLL_MS);
  private headParts: {
    title: HTMLElement;
    state: HTMLElement;
    meta: HTMLElement;
    progress: HTMLElement;
    best: HTMLElement;
  } | null = null;

  constructor(
    private readonly id: number,
    route: Route,
  ) {
    this.context = new ExperimentContext(id);
    this.head = h("div", { class: "exp-head" }, h("p", { class: "muted" }, "Loading…"));
    this.message = h("div");
    this.tabsHost = h("div");
    this.panel = tabPanel("overview");
    this.el = h(
      "div",
      { class: "page" },
      h(
        "nav",
        { class: "crumbs", "aria-label": "Breadcrumb" },
        h("a", { href: href("/experiments") }, "Experiments"),
        h("span", {}, `Experiment ${id}`),
      ),
      this.head,
      this.message,
      this.tabsHost,
      this.panel,
    );
    // The experiment is asked for first: the tabs' bigger requests wait for it anyway.
    const first = this.refresh();
    this.update(route);
    void first.then((live) => {
      if (live) this.poller.start();
    });
  }

  update(route: Route): void {
    if (this.gone) return;
    const id = tabOf(route);
    if (this.tab?.id === id) {
      this.tab.view.update(route.query);
      return;
    }
    const hadFocus = this.tabsHost.contains(document.activeElement);
    this.tabsHost.replaceChildren(
      tabBar(
        TABS.map((t) => ({
          id: t.id,
          label: t.label,
          href: href(`/experiments/${this.id}${t.id === "overview" ? "" : `/${t.id}`}`),
        })),
        id,
        "Experiment sections",
      ),
    );
    if (hadFocus) this.tabsHost.querySelector<HTMLElement>("[aria-selected=true]")?.focus();
    this.tab?.view.dispose();
    const view = this.createTab(id, route.query);
    this.tab = { id, view };
    const panel = tabPanel(id);
    panel.append(view.el);
    this.panel.replaceWith(panel);
    this.panel = panel;
  }

  dispose(): void {
    this.poller.stop();
    this.controller.abort();
    this.tab?.view.dispose();
  }

  private createTab(id: TabId, query: URLSearchParams): ExperimentTab {
    switch (id) {
      case "overview":
        return new OverviewTab(this.context, query);
      case "visualization":
        return new VisualizationTab(this.context, query);
      case "trials":
        return new TrialsTab(this.context, query);
      case "checkpoints":
        return new CheckpointsTab(this.context, query);
      case "config":
        return new ConfigTab(this.context);
    }
  }

  /** Fetch the experiment; false once it has ended (the poller stops). */
  private async refresh(): Promise<boolean> {
    try {
      const experiment = await api.experiment(this.id, this.controller.signal);
      this.message.replaceChildren();
      this.show(experiment);
      return this.context.live;
    } catch (err) {
      if (this.controller.signal.aborted) return false;
      if (isNotFound(err)) {
        // Deleted, or a wrong address: a not-found page, not an error above empty tabs.
        this.dispose();
        this.tab = null;
        this.gone = true;
        this.el.replaceChildren(
          ...notFoundContent(`There is no experiment ${this.id}: it was deleted, or the address is wrong.`),
        );
        return false;
      }
      this.message.replaceChildren(notice(`Could not load experiment ${this.id}: ${errorMessage(err)}`));
      if (!this.context.experiment) this.head.replaceChildren();
      return true;
    }
  }

  private show(experiment: Experiment): void {
    this.context.set(experiment);
    document.title = `${experiment.name ?? `Experiment ${experiment.id}`} · PEDL`;
    if (!this.headParts) this.buildHead(experiment);
    const parts = this.headParts;
    if (!parts) return;
    parts.title.replaceChildren(
      experiment.name ?? `Experiment ${experiment.id}`,
      h("span", { class: "muted id" }, ` #${experiment.id}`),
    );
    parts.state.replaceChildren(stateBadge(experiment.state, "experiment-state"));
    parts.meta.replaceChildren(
      h("span", {}, `Owner ${experiment.owner}`),
      h("span", {}, "Started ", h("time", { datetime: experiment.created_at }, formatTime(experiment.created_at))),
      h("span", {}, `Duration ${formatDuration(elapsed(experiment.created_at, experiment.ended_at))}`),
    );
    parts.progress.replaceChildren(progressBar(experiment.progress, experiment.state, "Search progress"));
    parts.best.replaceChildren(
      h("span", { class: "muted" }, `Best ${experiment.searcher_metric ?? "metric"}`),
      h("strong", { class: "metric" }, formatNumber(experiment.best_validation)),
    );
    const archived = experiment.archived === true;
    for (const def of ACTIONS) {
      const button = this.buttons.get(def.action);
      if (!button) continue;
      button.disabled = !def.allowed.includes(experiment.state);
      // Archive while not archived, Unarchive while archived: one of the two shows.
      if (def.action === "archive") button.hidden = archived || !ENDED.includes(experiment.state);
      if (def.action === "unarchive") button.hidden = !archived;
    }
    if (this.deleteButton) this.deleteButton.disabled = !ENDED.includes(experiment.state);
    this.notes?.set(experiment);
  }

  private buildHead(experiment: Experiment): void {
    const parts = {
      title: h("h1", {}),
      state: h("span", {}),
      meta: h("div", { class: "meta muted" }),
      progress: h("div", { class: "grow" }),
      best: h("div", { class: "best" }),
    };
    this.headParts = parts;
    const actions = h(
      "div",
      { class: "actions", role: "group", "aria-label": "Experiment actions" },
      ACTIONS.map((def) => {
        const button = h(
          "button",
          {
            type: "button",
            class: def.action === "kill" ? "button danger-outline" : "button",
            "data-testid": `action-${def.action}`,
            onclick: () => void this.act(def),
          },
          def.label,
        );
        this.buttons.set(def.action, button);
        return button;
      }),
    );
    this.deleteButton = h(
      "button",
      {
        type: "button",
        class: "button danger-outline",
        "data-testid": "action-delete",
        onclick: () => void this.remove(),
      },
      "Delete",
    );
    this.tensorBoardButton = h(
      "button",
      {
        type: "button",
        class: "button",
        "data-testid": "action-tensorboard",
        title: "Open this experiment's metrics in TensorBoard (started by the master)",
        onclick: () => void this.openTensorBoard(),
      },
      "TensorBoard",
    );
    actions.append(this.tensorBoardButton, this.deleteButton);
    this.notes = new ExperimentNotes(experiment, (saved) => this.show(saved));
    this.head.replaceChildren(
      h("div", { class: "exp-title" }, h("div", { class: "title-line" }, parts.title, parts.state), actions),
      parts.meta,
      h("div", { class: "exp-progress" }, parts.progress, parts.best),
      this.notes.el,
    );
  }

  private async remove(): Promise<void> {
    const confirmed = await confirmAction({
      title: "Delete this experiment?",
      message:
        "Its trials, metrics and logs are deleted, and its checkpoints' files are removed from storage. This cannot be undone.",
      confirmLabel: "Delete experiment",
      danger: true,
    });
    if (!confirmed) return;
    if (this.deleteButton) this.deleteButton.disabled = true;
    try {
      const left = await api.deleteExperiment(this.id);
      if (left.length > 0) {
        toast(`Experiment ${this.id} deleted, but files stayed in storage: ${left.join("; ")}`, "error");
      } else {
        toast(`Experiment ${this.id} deleted.`);
      }
      navigate("/experiments");
    } catch (err) {
      toast(`Could not delete experiment ${this.id}: ${errorMessage(err)}`, "error");
      if (this.deleteButton) this.deleteButton.disabled = false;
    }
  }

  /** Start (or find) the master's TensorBoard over this experiment and open it in a new tab
   * (opened at the click, so no popup blocker stops it; this tab if none opens). */
  private async openTensorBoard(): Promise<void> {
    const tab = window.open("", "_blank");
    if (tab) tab.opener = null;
    const button = this.tensorBoardButton;
    if (button) {
      button.disabled = true;
      button.textContent = "Starting TensorBoard…";
    }
    try {
      let board = await api.startTensorBoard([this.id]);
      const deadline = Date.now() + 60_000;
      while (board.state === "STARTING" && Date.now() < deadline) {
        await new Promise((resolve) => window.setTimeout(resolve, 500));
        board = await api.tensorBoard(board.id);
      }
      if (board.state !== "RUNNING") {
        throw new Error(board.error ?? `TensorBoard is ${board.state.toLowerCase()}`);
      }
      if (tab) tab.location.href = board.service_address;
      else window.location.assign(board.service_address);
    } catch (err) {
      tab?.close();
      toast(`Could not open TensorBoard for experiment ${this.id}: ${errorMessage(err)}`, "error");
    } finally {
      if (button) {
        button.disabled = false;
        button.textContent = "TensorBoard";
      }
    }
  }

  private async act(def: ActionDef): Promise<void> {
    if (def.confirm && !(await confirmAction({ ...def.confirm, danger: true }))) return;
    const button = this.buttons.get(def.action);
    if (button) button.disabled = true;
    try {
      this.show(await api.experimentAction(this.id, def.action));
      const done = def.action === "archive" || def.action === "unarchive";
      toast(`Experiment ${this.id}: ${def.label.toLowerCase()}${done ? "d" : " requested"}.`);
      this.poller.start();
    } catch (err) {
      toast(`Could not ${def.action} experiment ${this.id}: ${errorMessage(err)}`, "error");
      const experiment = this.context.experiment;
      if (experiment) this.show(experiment);
    }
  }
}
