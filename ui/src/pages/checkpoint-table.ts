// The checkpoints table of the experiment and trial pages: metric, size, state, download, and
// registering a checkpoint as a model version.

import {
  ApiError,
  type Checkpoint,
  type CheckpointRegistration,
  api,
  checkpointArchiveUrl,
  downloadCheckpoint,
  metricNumber,
} from "../api";
import { errorMessage, toast } from "../components/notice";
import { stateBadge } from "../components/state-badge";
import { type Column, dataTable } from "../components/table";
import { h } from "../dom";
import { formatBytes, formatInteger, formatNumber, formatTime } from "../format";
import { href } from "../router";

/** The model versions holding each of these checkpoints (by uuid). */
export async function registrationsOf(
  checkpoints: readonly Checkpoint[],
  signal?: AbortSignal,
): Promise<Map<string, CheckpointRegistration[]>> {
  const held = new Map<string, CheckpointRegistration[]>();
  const uuids = checkpoints.filter((c) => c.state === "COMPLETED").map((c) => c.uuid);
  if (uuids.length === 0) return held;
  for (const r of await api.checkpointRegistrations(uuids, signal)) {
    held.set(r.checkpoint_uuid, [...(held.get(r.checkpoint_uuid) ?? []), r]);
  }
  return held;
}

export function checkpointTable(
  checkpoints: readonly Checkpoint[],
  metric: string | null,
  options: { showTrial: boolean; registered: ReadonlyMap<string, readonly CheckpointRegistration[]> },
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
      cell: (c) =>
        c.state === "COMPLETED"
          ? registerControl(c, options.registered.get(c.uuid) ?? [])
          : h("span", { class: "muted" }, "—"),
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

/** "Register": a button that opens a model-name field (focused, with the existing models to
 * pick from); the checkpoint becomes that model's next version (the model is created first when
 * no model has that name). A checkpoint that model versions hold shows them instead. */
function registerControl(c: Checkpoint, registered: readonly CheckpointRegistration[]): HTMLElement {
  const host = h("span", { class: "register" });
  if (registered.length > 0) {
    host.replaceChildren(...registered.flatMap((r, i) => [i > 0 ? ", " : "", versionLink(r.model_name, r.version)]));
    return host;
  }
  const open = h(
    "button",
    {
      type: "button",
      class: "link-button",
      "aria-label": `Register checkpoint ${c.uuid} as a model version`,
      onclick: () => {
        host.replaceChildren(form);
        input.focus();
        fillModelNames(list);
      },
    },
    "Register",
  );
  const listId = `models-for-${c.uuid}`;
  const list = h("datalist", { id: listId, "data-testid": "model-names" });
  const input = h("input", {
    type: "text",
    name: "model",
    placeholder: "Model name",
    maxlength: 255,
    list: listId,
    autocomplete: "off",
    "aria-label": "Model name",
  }) as HTMLInputElement;
  const problem = h("span", { class: "field-error", role: "alert" });
  const form = h(
    "form",
    {
      class: "inline-form",
      novalidate: true,
      onsubmit: (event: Event) => {
        event.preventDefault();
        const name = input.value.trim();
        if (!name) {
          problem.textContent = "Enter a model name, new or existing.";
          input.setAttribute("aria-invalid", "true");
          input.focus();
          return;
        }
        problem.textContent = "";
        input.removeAttribute("aria-invalid");
        submit.disabled = true;
        register(name, c.uuid).then(
          (version) => {
            toast(`Registered as ${version.model_name} version ${version.version}`);
            host.replaceChildren(versionLink(version.model_name, version.version));
          },
          (err: unknown) => {
            submit.disabled = false;
            problem.textContent = errorMessage(err);
          },
        );
      },
      onkeydown: (event: Event) => {
        if ((event as KeyboardEvent).key === "Escape") cancel();
      },
    },
    input,
    list,
    h("button", { type: "submit" }, "OK"),
    h("button", { type: "button", class: "link-button", onclick: () => cancel() }, "Cancel"),
    problem,
  );
  const submit = form.querySelector("button[type=submit]") as HTMLButtonElement;
  const cancel = () => {
    problem.textContent = "";
    input.value = "";
    host.replaceChildren(open);
    open.focus();
  };
  host.replaceChildren(open);
  return host;
}

function versionLink(model: string, version: number): HTMLElement {
  return h("a", { href: href(`/models/${encodeURIComponent(model)}`) }, `${model} v${version}`);
}

/** The existing models' names as the field's suggestions (fetched when the field opens). */
function fillModelNames(list: HTMLDataListElement): void {
  api.models({ limit: 1000, offset: 0 }).then(
    (page) => list.replaceChildren(...page.items.filter((m) => !m.archived).map((m) => h("option", { value: m.name }))),
    () => list.replaceChildren(),
  );
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
