// Labels as chips, and the editors of an experiment's description and labels.

import { type Experiment, api } from "../api";
import { errorMessage, toast } from "../components/notice";
import { h } from "../dom";

export const MAX_LABELS = 100;
export const MAX_LABEL_LENGTH = 255;
export const MAX_DESCRIPTION_LENGTH = 10_000;

/** A label; clickable (to filter by it) and/or removable. */
export function labelChip(
  label: string,
  options: { onSelect?: () => void; selectLabel?: string; onRemove?: () => void; removeLabel?: string } = {},
): HTMLElement {
  const text = options.onSelect
    ? h(
        "button",
        {
          type: "button",
          class: "chip-text",
          title: options.selectLabel ?? null,
          "aria-label": options.selectLabel ?? null,
          onclick: options.onSelect,
        },
        label,
      )
    : h("span", { class: "chip-text" }, label);
  return h(
    "span",
    { class: "chip" },
    text,
    options.onRemove
      ? h(
          "button",
          {
            type: "button",
            class: "chip-remove",
            "aria-label": options.removeLabel ?? `Remove ${label}`,
            onclick: options.onRemove,
          },
          "×",
        )
      : null,
  );
}

/** The description (editable in place) and the labels (add, remove) of an experiment. */
export class ExperimentNotes {
  readonly el: HTMLElement;
  private experiment: Experiment;
  private editing = false;
  private busy = false;

  constructor(
    experiment: Experiment,
    private readonly onSaved: (experiment: Experiment) => void,
  ) {
    this.experiment = experiment;
    this.el = h("div", { class: "notes" });
    this.render();
  }

  /** A fresher copy of the experiment (polling); an open editor keeps its text. */
  set(experiment: Experiment): void {
    const changed =
      experiment.description !== this.experiment.description ||
      experiment.labels.join("\n") !== this.experiment.labels.join("\n");
    this.experiment = experiment;
    if (changed && !this.editing && !this.el.contains(document.activeElement)) this.render();
  }

  private async save(patch: { description?: string; labels?: string[] }): Promise<boolean> {
    if (this.busy) return false;
    this.busy = true;
    try {
      this.experiment = await api.patchExperiment(this.experiment.id, patch);
      this.onSaved(this.experiment);
      return true;
    } catch (err) {
      toast(`Could not save: ${errorMessage(err)}`, "error");
      return false;
    } finally {
      this.busy = false;
    }
  }

  private render(): void {
    this.el.replaceChildren(this.editing ? this.descriptionEditor() : this.descriptionView(), this.labelsView());
  }

  private descriptionView(): HTMLElement {
    const text = this.experiment.description;
    return h(
      "div",
      { class: "description-view" },
      text ? h("p", { class: "description-text" }, text) : h("p", { class: "muted" }, "No description."),
      h(
        "button",
        {
          type: "button",
          class: "button small",
          "data-testid": "edit-description",
          onclick: () => {
            this.editing = true;
            this.render();
            this.el.querySelector("textarea")?.focus();
          },
        },
        text ? "Edit description" : "Add a description",
      ),
    );
  }

  private descriptionEditor(): HTMLElement {
    const area = h("textarea", {
      id: "description-input",
      rows: 3,
      maxlength: MAX_DESCRIPTION_LENGTH,
      "data-testid": "description-input",
    });
    area.value = this.experiment.description ?? "";
    const finish = () => {
      this.editing = false;
      this.render();
      this.el.querySelector<HTMLButtonElement>("[data-testid=edit-description]")?.focus();
    };
    return h(
      "form",
      {
        class: "description-edit",
        onsubmit: async (e: Event) => {
          e.preventDefault();
          if (await this.save({ description: area.value.trim() })) finish();
        },
        onkeydown: (e: Event) => {
          if ((e as KeyboardEvent).key === "Escape") finish();
        },
      },
      h("label", { for: "description-input" }, "Description"),
      area,
      h(
        "div",
        { class: "row" },
        h("button", { type: "submit", class: "button primary small", "data-testid": "save-description" }, "Save"),
        h("button", { type: "button", class: "button small", onclick: finish }, "Cancel"),
      ),
    );
  }

  private labelsView(): HTMLElement {
    const labels = this.experiment.labels;
    const input = h("input", {
      id: "label-input",
      type: "text",
      placeholder: "New label",
      maxlength: MAX_LABEL_LENGTH,
      autocomplete: "off",
      "data-testid": "label-input",
    });
    const add = async () => {
      const label = input.value.trim();
      if (!label) return;
      if (labels.includes(label)) {
        input.value = "";
        return;
      }
      if (labels.length >= MAX_LABELS) {
        toast(`At most ${MAX_LABELS} labels.`, "error");
        return;
      }
      if (await this.save({ labels: [...labels, label] })) {
        this.render();
        this.el.querySelector<HTMLInputElement>("#label-input")?.focus();
      }
    };
    return h(
      "div",
      { class: "labels-edit" },
      h("span", { class: "label-title" }, "Labels"),
      h(
        "div",
        { class: "chips", "data-testid": "experiment-labels" },
        labels.length === 0 ? h("span", { class: "muted" }, "none") : null,
        labels.map((label) =>
          labelChip(label, {
            removeLabel: `Remove the label ${label}`,
            onRemove: async () => {
              if (await this.save({ labels: labels.filter((l) => l !== label) })) {
                this.render();
                this.el.querySelector<HTMLInputElement>("#label-input")?.focus();
              }
            },
          }),
        ),
      ),
      h(
        "form",
        {
          class: "label-add",
          onsubmit: (e: Event) => {
            e.preventDefault();
            void add();
          },
        },
        h("label", { for: "label-input", class: "visually-hidden" }, "Add a label"),
        input,
        h("button", { type: "submit", class: "button small" }, "Add"),
      ),
    );
  }
}
