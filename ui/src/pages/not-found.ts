import { h } from "../dom";
import { type Page, type Route, href } from "../router";

export class NotFoundPage implements Page {
  readonly el: HTMLElement;

  constructor(route: Route) {
    this.el = h(
      "div",
      { class: "page" },
      h("h1", {}, "Not found"),
      h("p", {}, `There is no page at ${route.path}. `, h("a", { href: href("/experiments") }, "See the experiments.")),
    );
  }

  update(): void {}

  dispose(): void {}
}
