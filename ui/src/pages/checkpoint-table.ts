// The checkpoints table of the experiment and trial pages: metric, size, state, download, and
// registering a checkpoint as a model version.

import { ApiError, type Checkpoint, api, checkpointArchiveUrl, downloadCheckpoint, metricNumber } from "../api";
import { errorMessage, toast } from "../components/notice";
import { stateBadge } from "../components/state-badge";
import { type Column, dataTable } from "../components/table";
import { h } from "../dom";
import { formatBytes, formatInteger, formatNumber, formatTime } from "../format";
import { href } from "../router";

export function checkpointTable(
  checkpoints: readonly Checkpoint[],
  metric: string | null,
  options: { showTrial: boolean },
): HTMLTableElement {
  const columns: Column<Checkpoint>[] = [
    {
      label: "Checkpoint",
      className: "mono",
      cell: (c) => h("span", { title: c.uuid }, c.uuid.slice(0, 8)),
    },
    ...(options.showTrial
      ? [
          {
            label: "Trial",
            numeric: true,
            cell: (c: Checkpoint) => h("a", { href: href(`/trials/${c.trial_id}`) }, String(c.trial_id)),
          },
        ]
      : []),
    { label: "Batches", numeric: true, cell: (c) => formatInteger(c.total_batches) },
    {
      label: metric ?? "Metric",
      numeric: true,
      title: "The searcher metric of the validation at the checkpoint's batch",
      cell: (c) =>
        h("span", { class: "metric" }, formatNumber(metric ? metricNumber(c.validation_metrics?.[metric]) : null)),
    },
    { label: "Size", numeric: true, cell: (c) => formatBytes(c.size) },
    { label: "State", cell: (c) => stateBadge(c.state, undefined, { kind: "checkpoint" }) },
    { label: "Created", cell: (c) => formatTime(c.created_at) },
    {
      label: "Download",
      cell: (c) =>
        c.state === "COMPLETED"
          ? h(
              "a",
              {
                href: checkpointArchiveUrl(c.uuid),
                download: `checkpoint-${c.uuid}.tar`,
                onclick: (event: Event) => {
                  event.preventDefault();
                  downloadCheckpoint(c.uuid).catch((err: unknown) => toast(errorMessage(err), "error"));
                },
                "aria-label": `Download checkpoint ${c.uuid} (${formatBytes(c.size)})`,
              },
              "Download .tar",
            )
          : h("span", { class: "muted" }, "—"),
    },
    {
      label: "Register",
      cell: (c) => (c.state === "COMPLETED" ? registerControl(c) : h("span", { class: "muted" }, "—")),
    },
  ];
  return dataTable(checkpoints, {
    caption: "Checkpoints",
    columns,
    testId: "checkpoints-table",
    rowTestId: "checkpoint-row",
    rowKey: (c) => c.uuid,
    empty: "No checkpoints yet.",
  });
}

/** "Register": a button that opens a model-name field; the checkpoint becomes that model's next
 * version (the model is created first when no model has that name). */
function registerControl(c: Checkpoint): HTMLElement {
  const host = h("span", { class: "register" });
  const open = h(
    "button",
    {
      type: "button",
      class: "link-button",
      "aria-label": `Register checkpoint ${c.uuid} as a model version`,
      onclick: () => host.replaceChildren(form),
    },
    "Register",
  );
  const input = h("input", {
    type: "text",
    name: "model",
    placeholder: "Model name",
    maxlength: 255,
    required: true,
    "aria-label": "Model name",
  }) as HTMLInputElement;
  const form = h(
    "form",
    {
      class: "inline-form",
      onsubmit: (event: Event) => {
        event.preventDefault();
        const name = input.value.trim();
        if (!name) return;
        register(name, c.uuid).then(
          (version) => {
            toast(`Registered as ${version.model_name} version ${version.version}`);
            host.replaceChildren(
              h("a", { href: href(`/models/${encodeURIComponent(name)}`) }, `${name} v${version.version}`),
            );
          },
          (err: unknown) => toast(errorMessage(err), "error"),
        );
      },
    },
    input,
    h("button", { type: "submit" }, "OK"),
  );
  host.replaceChildren(open);
  return host;
}

async function register(name: string, uuid: string) {
  try {
    await api.model(name);
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 404)) throw err;
    await api.createModel(name);
  }
  return api.registerVersion(name, uuid);
}
