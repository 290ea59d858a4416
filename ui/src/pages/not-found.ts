import { ApiError } from "../api";
import { h } from "../dom";
import { type Page, type Route, href } from "../router";

/** Whether `err` is the master's 404 for the thing a page shows (deleted, or a wrong id). */
export function isNotFound(err: unknown): boolean {
  return err instanceof ApiError && err.status === 404;
}

/** A not-found page's content: what is missing, and the way back to the experiments. */
export function notFoundContent(what: string): HTMLElement[] {
  document.title = "Not found · PEDL";
  return [
    h("h1", { "data-testid": "not-found" }, "Not found"),
    h("p", {}, `${what} `, h("a", { href: href("/experiments") }, "See the experiments.")),
  ];
}

export class NotFoundPage implements Page {
  readonly el: HTMLElement;

  constructor(route: Route) {
    this.el = h("div", { class: "page" }, ...notFoundContent(`There is no page at ${route.path}.`));
  }

  update(): void {}

  dispose(): void {}
}
