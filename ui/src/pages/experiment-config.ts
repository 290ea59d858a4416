// Config: the experiment's configuration as highlighted YAML, with a copy button, in two views:
// the effective config, as the master stored it with every default filled in (Determined's
// compatibility fields included: the fields left unset, null, are hidden until asked for), and
// the config as submitted, the text its submitter wrote (its secrets masked by the master).

import { toast } from "../components/notice";
import { toYaml, yamlView } from "../components/yaml-view";
import type { Experiment } from "../api";
import { h } from "../dom";
import type { ExperimentContext, ExperimentTab } from "./experiment-context";

/** The config without its unset fields: every null value's key is left out, at any depth
 * (lists keep their items), and `count` says how many there were. */
export function withoutNulls(value: unknown): { value: unknown; count: number } {
  if (Array.isArray(value)) {
    let count = 0;
    const items = value.map((item) => {
      const inner = withoutNulls(item);
      count += inner.count;
      return inner.value;
    });
    return { value: items, count };
  }
  if (value === null || typeof value !== "object") return { value, count: 0 };
  let count = 0;
  const kept: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
    if (item === null || item === undefined) {
      count += 1;
      continue;
    }
    const inner = withoutNulls(item);
    count += inner.count;
    kept[key] = inner.value;
  }
  return { value: kept, count };
}

/** The submitted config's text in a <pre> like the effective one's, its comment lines muted. */
function submittedView(text: string): HTMLElement {
  const code = h("code", {});
  for (const line of text
    .replace(/^(\s*\n)+/, "")
    .replace(/\s+$/, "")
    .split("\n")) {
    code.append(line.trimStart().startsWith("#") ? h("span", { class: "y-comment" }, line) : line, "\n");
  }
  return h("pre", { class: "yaml", tabindex: 0, "aria-label": "Experiment configuration as submitted" }, code);
}

type View = "effective" | "submitted";

export class ConfigTab implements ExperimentTab {
  readonly el: HTMLElement;

  constructor(context: ExperimentContext) {
    this.el = h("section", { class: "card config" }, h("p", { class: "muted" }, "Loading…"));
    void context.ready.then((experiment) => this.show(experiment));
  }

  update(): void {}

  dispose(): void {}

  private show(experiment: Experiment): void {
    const full = experiment.config;
    const trimmed = withoutNulls(full);
    const submitted = experiment.original_config ?? null;
    let view: View = "effective";
    const shown = h("div", { "data-testid": "config-yaml" });
    const note = h("p", { class: "muted small", "data-testid": "config-note" });
    const showNulls = h("input", {
      id: "config-show-nulls",
      type: "checkbox",
      "data-testid": "config-show-nulls",
      onchange: () => draw(),
    });
    const nullsToggle =
      trimmed.count > 0
        ? h(
            "label",
            { class: "check small", for: "config-show-nulls" },
            showNulls,
            ` Show the ${trimmed.count} unset fields`,
          )
        : h("span");
    const text = (): string =>
      view === "submitted" && submitted !== null ? submitted : toYaml(showNulls.checked ? full : trimmed.value);
    const draw = () => {
      if (view === "submitted" && submitted !== null) {
        note.textContent =
          "As its submitter wrote it (after any template was merged in): the fields left out take their defaults.";
        nullsToggle.style.display = "none";
        shown.replaceChildren(submittedView(submitted));
        return;
      }
      note.textContent =
        "As the master stored it: the submitted config with its defaults filled in." +
        (trimmed.count > 0 && !showNulls.checked ? ` ${trimmed.count} fields left unset (null) are hidden.` : "");
      nullsToggle.style.display = "";
      shown.replaceChildren(yamlView(showNulls.checked ? full : trimmed.value));
    };
    const choice = (value: View, label: string) => {
      const input = h("input", {
        type: "radio",
        name: "config-view",
        id: `config-view-${value}`,
        value,
        "data-testid": `config-view-${value}`,
        checked: value === view,
        disabled: value === "submitted" && submitted === null,
        onchange: () => {
          view = value;
          draw();
        },
      });
      return h("label", { class: "check small", for: `config-view-${value}` }, input, ` ${label}`);
    };
    const copy = h(
      "button",
      {
        type: "button",
        class: "button small",
        onclick: async () => {
          try {
            await navigator.clipboard.writeText(text());
            toast("Config copied.");
          } catch {
            toast("The browser did not allow copying.", "error");
          }
        },
      },
      "Copy YAML",
    );
    this.el.replaceChildren(
      h("div", { class: "card-head" }, h("h2", {}, "Configuration"), copy),
      h(
        "div",
        { class: "config-views", role: "radiogroup", "aria-label": "Which config" },
        choice("effective", "Effective (with defaults)"),
        choice("submitted", "As submitted"),
        nullsToggle,
      ),
      note,
      shown,
    );
    draw();
  }
}
