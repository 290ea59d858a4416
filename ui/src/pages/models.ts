// The model registry: every model, and one model's versions (each a registered checkpoint).

import { type Model, type ModelVersion, api } from "../api";
import { errorMessage, notice } from "../components/notice";
import { stateBadge } from "../components/state-badge";
import { type Column, dataTable } from "../components/table";
import { h } from "../dom";
import { formatInteger, formatTime } from "../format";
import { type Page, href } from "../router";

const PAGE_SIZE = 1000;

export class ModelsPage implements Page {
  readonly el: HTMLElement;
  private readonly body = h("div", { class: "table-wrap" });
  private readonly message = h("div");
  private readonly controller = new AbortController();

  constructor() {
    document.title = "Models · PEDL";
    this.el = h(
      "div",
      { class: "page" },
      h("div", { class: "page-head" }, h("h1", {}, "Models")),
      this.message,
      h("section", { class: "card" }, this.body),
    );
    void this.load();
  }

  update(): void {}

  dispose(): void {
    this.controller.abort();
  }

  private async load(): Promise<void> {
    try {
      const page = await api.models({ limit: PAGE_SIZE, offset: 0 }, this.controller.signal);
      const columns: Column<Model>[] = [
        { label: "Name", cell: (m) => h("a", { href: href(`/models/${encodeURIComponent(m.name)}`) }, m.name) },
        { label: "Versions", numeric: true, cell: (m) => formatInteger(m.num_versions) },
        { label: "Labels", cell: (m) => m.labels.join(", ") },
        { label: "Owner", cell: (m) => m.owner },
        { label: "Updated", cell: (m) => formatTime(m.updated_at) },
        { label: "Description", cell: (m) => m.description },
      ];
      this.body.replaceChildren(
        dataTable(page.items, {
          caption: "Models",
          columns,
          testId: "models-table",
          rowTestId: "model-row",
          rowKey: (m) => String(m.id),
          empty: "No models yet: register a checkpoint from an experiment's or a trial's checkpoints.",
        }),
      );
    } catch (err) {
      if (!this.controller.signal.aborted)
        this.message.replaceChildren(notice(`Could not load the models: ${errorMessage(err)}`));
    }
  }
}

export class ModelPage implements Page {
  readonly el: HTMLElement;
  private readonly head = h("div", { class: "page-head" }, h("h1", {}, "Model"));
  private readonly about = h("p", { class: "muted" });
  private readonly body = h("div", { class: "table-wrap" });
  private readonly message = h("div");
  private readonly controller = new AbortController();

  constructor(private readonly name: string) {
    document.title = `Model ${name} · PEDL`;
    this.el = h(
      "div",
      { class: "page" },
      this.head,
      this.about,
      this.message,
      h("section", { class: "card" }, this.body),
    );
    void this.load();
  }

  update(): void {}

  dispose(): void {
    this.controller.abort();
  }

  private async load(): Promise<void> {
    try {
      const [model, versions] = await Promise.all([
        api.model(this.name, this.controller.signal),
        api.modelVersions(this.name, this.controller.signal),
      ]);
      this.head.replaceChildren(h("h1", {}, `Model ${model.name}`));
      this.about.textContent = [model.description, model.labels.length ? `labels: ${model.labels.join(", ")}` : ""]
        .filter(Boolean)
        .join(" · ");
      const columns: Column<ModelVersion>[] = [
        { label: "Version", numeric: true, cell: (v) => String(v.version) },
        {
          label: "Checkpoint",
          className: "mono",
          cell: (v) => h("span", { title: v.checkpoint.uuid }, v.checkpoint.uuid.slice(0, 8)),
        },
        {
          label: "Experiment",
          numeric: true,
          cell: (v) =>
            h("a", { href: href(`/experiments/${v.checkpoint.experiment_id}`) }, String(v.checkpoint.experiment_id)),
        },
        {
          label: "Trial",
          numeric: true,
          cell: (v) => h("a", { href: href(`/trials/${v.checkpoint.trial_id}`) }, String(v.checkpoint.trial_id)),
        },
        { label: "Batches", numeric: true, cell: (v) => formatInteger(v.checkpoint.total_batches) },
        { label: "State", cell: (v) => stateBadge(v.checkpoint.state, undefined, { kind: "checkpoint" }) },
        { label: "Registered by", cell: (v) => v.owner },
        { label: "Registered", cell: (v) => formatTime(v.created_at) },
      ];
      this.body.replaceChildren(
        dataTable(versions, {
          caption: "Versions",
          columns,
          testId: "versions-table",
          rowTestId: "version-row",
          rowKey: (v) => String(v.version),
          empty: "No versions yet.",
        }),
      );
    } catch (err) {
      if (!this.controller.signal.aborted)
        this.message.replaceChildren(notice(`Could not load model ${this.name}: ${errorMessage(err)}`));
    }
  }
}
