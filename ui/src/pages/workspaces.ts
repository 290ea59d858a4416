// Workspaces and projects (Determined's way to organize experiments): every workspace with
// its projects, and one project's page with its experiments.

import { errorMessage, notice } from "../components/notice";
import { stateBadge } from "../components/state-badge";
import { type Column, dataTable } from "../components/table";
import { h } from "../dom";
import { formatInteger, formatPercent, formatTime } from "../format";
import { type Page, href } from "../router";
import { type Experiment, type Project, type Workspace, workspacesApi } from "../workspaces";

const PAGE_SIZE = 1000;

function projectLink(p: Project): HTMLElement {
  return h("a", { href: href(`/projects/${p.id}`), "data-testid": "project-link" }, p.name);
}

export class WorkspacesPage implements Page {
  readonly el: HTMLElement;
  private readonly body = h("div", { class: "workspaces" });
  private readonly message = h("div");
  private readonly controller = new AbortController();

  constructor() {
    document.title = "Workspaces · PEDL";
    this.el = h(
      "div",
      { class: "page" },
      h("div", { class: "page-head" }, h("h1", {}, "Workspaces")),
      h(
        "p",
        { class: "muted" },
        "Each workspace holds projects, each project experiments. Create them with ",
        h("code", {}, "det workspace create"),
        " and ",
        h("code", {}, "det project create"),
        "; put an experiment in one with ",
        h("code", {}, "--project_id"),
        " or move it with ",
        h("code", {}, "det experiment move"),
        ".",
      ),
      this.message,
      this.body,
    );
    void this.load();
  }

  update(): void {}

  dispose(): void {
    this.controller.abort();
  }

  private async load(): Promise<void> {
    const signal = this.controller.signal;
    try {
      const [workspaces, projects] = await Promise.all([
        workspacesApi.workspaces(signal),
        workspacesApi.projects(signal),
      ]);
      this.body.replaceChildren(
        ...workspaces.map((w) =>
          this.section(
            w,
            projects.filter((p) => p.workspace_id === w.id),
          ),
        ),
      );
    } catch (err) {
      if (!signal.aborted) this.message.replaceChildren(notice(`Could not load the workspaces: ${errorMessage(err)}`));
    }
  }

  private section(workspace: Workspace, projects: Project[]): HTMLElement {
    const columns: Column<Project>[] = [
      { label: "Project", cell: projectLink },
      { label: "Key", cell: (p) => p.key },
      { label: "Experiments", numeric: true, cell: (p) => formatInteger(p.num_experiments) },
      { label: "Active", numeric: true, cell: (p) => formatInteger(p.num_active_experiments) },
      { label: "Owner", cell: (p) => p.owner },
      { label: "Description", cell: (p) => p.description },
      { label: "Archived", cell: (p) => (p.archived ? "archived" : "") },
    ];
    const title = `${workspace.name}${workspace.archived ? " (archived)" : ""}`;
    return h(
      "section",
      { class: "card", "data-testid": "workspace", "data-workspace-id": String(workspace.id) },
      h("h2", {}, title),
      h(
        "div",
        { class: "table-wrap" },
        dataTable(projects, {
          caption: `Projects of ${workspace.name}`,
          columns,
          testId: "projects-table",
          rowTestId: "project-row",
          rowKey: (p) => String(p.id),
          rowHref: (p) => href(`/projects/${p.id}`),
          empty: "No projects yet: det project create WORKSPACE NAME.",
        }),
      ),
    );
  }
}

export class ProjectPage implements Page {
  readonly el: HTMLElement;
  private readonly heading = h("h1", { "data-testid": "project-name" }, "Project");
  private readonly about = h("p", { class: "muted", "data-testid": "project-about" });
  private readonly body = h("div", { class: "table-wrap" });
  private readonly message = h("div");
  private readonly controller = new AbortController();

  constructor(private readonly projectId: number) {
    document.title = `Project ${projectId} · PEDL`;
    this.el = h(
      "div",
      { class: "page" },
      h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: href("/workspaces") }, "Workspaces")),
      h("div", { class: "page-head" }, this.heading),
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
    const signal = this.controller.signal;
    try {
      const [project, page] = await Promise.all([
        workspacesApi.project(this.projectId, signal),
        workspacesApi.projectExperiments(this.projectId, PAGE_SIZE, 0, signal),
      ]);
      document.title = `${project.name} · PEDL`;
      this.heading.textContent = project.name;
      this.about.replaceChildren(
        `Workspace ${project.workspace_name} · key ${project.key} · ${formatInteger(project.num_experiments)} experiment${project.num_experiments === 1 ? "" : "s"}, `,
        `${formatInteger(project.num_active_experiments)} active${project.archived ? " · archived" : ""}`,
        project.description ? ` · ${project.description}` : "",
      );
      const columns: Column<Experiment>[] = [
        { label: "ID", numeric: true, cell: (e) => h("a", { href: href(`/experiments/${e.id}`) }, String(e.id)) },
        { label: "Name", cell: (e) => e.name ?? "" },
        { label: "State", cell: (e) => stateBadge(e.state, "experiment-state") },
        { label: "Progress", numeric: true, cell: (e) => formatPercent(e.progress) },
        { label: "Owner", cell: (e) => e.owner },
        { label: "Created", cell: (e) => formatTime(e.created_at) },
      ];
      this.body.replaceChildren(
        dataTable(page.items, {
          caption: `Experiments of ${project.name}`,
          columns,
          testId: "project-experiments",
          rowTestId: "project-experiment-row",
          rowKey: (e) => String(e.id),
          rowHref: (e) => href(`/experiments/${e.id}`),
          empty: "No experiments in this project yet: det experiment create CONFIG MODEL_DIR --project_id ID.",
        }),
      );
    } catch (err) {
      if (!signal.aborted)
        this.message.replaceChildren(notice(`Could not load project ${this.projectId}: ${errorMessage(err)}`));
    }
  }
}
