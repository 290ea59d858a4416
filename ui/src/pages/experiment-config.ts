// Config: the experiment's configuration as highlighted YAML, with a copy button.

import { toast } from "../components/notice";
import { toYaml, yamlView } from "../components/yaml-view";
import { h } from "../dom";
import type { ExperimentContext, ExperimentTab } from "./experiment-context";

export class ConfigTab implements ExperimentTab {
  readonly el: HTMLElement;

  constructor(context: ExperimentContext) {
    this.el = h("section", { class: "card config" }, h("p", { class: "muted" }, "Loading…"));
    void context.ready.then((experiment) => {
      const copy = h(
        "button",
        {
          type: "button",
          class: "button small",
          onclick: async () => {
            try {
              await navigator.clipboard.writeText(toYaml(experiment.config));
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
        h("p", { class: "muted small" }, "As the master stored it: the submitted config with its defaults filled in."),
        yamlView(experiment.config),
      );
    });
  }

  update(): void {}

  dispose(): void {}
}
