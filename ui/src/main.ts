// The single-page app: a header with the main sections and the page the URL names.

import "./styles.css";
import { h } from "./dom";
import { ClusterPage } from "./pages/cluster";
import { ExperimentListPage } from "./pages/experiment-list";
import { ExperimentPage } from "./pages/experiment";
import { NotFoundPage } from "./pages/not-found";
import { TrialPage } from "./pages/trial";
import { type RouteDef, startRouter } from "./router";

const routes: RouteDef[] = [
  {
    pattern: /^\/(?:experiments\/?)?$/,
    key: () => "experiments",
    create: (_m, route) => new ExperimentListPage(route),
  },
  {
    pattern: /^\/experiments\/(\d+)(?:\/([a-z]+))?\/?$/,
    key: (m) => `experiment:${m[1]}`,
    create: (m, route) => new ExperimentPage(Number(m[1]), route),
  },
  {
    pattern: /^\/trials\/(\d+)\/?$/,
    key: (m) => `trial:${m[1]}`,
    create: (m, route) => new TrialPage(Number(m[1]), route),
  },
  { pattern: /^\/cluster\/?$/, key: () => "cluster", create: () => new ClusterPage() },
];

const nav = [
  { label: "Experiments", href: "#/experiments", section: /^\/(experiments|trials|$)/ },
  { label: "Cluster", href: "#/cluster", section: /^\/cluster/ },
];

const links = nav.map((item) => h("a", { href: item.href }, item.label));
const main = h("main", { id: "main", tabindex: -1 });
document.body.replaceChildren(
  h(
    "a",
    { class: "skip-link", href: "#main", onclick: (e: Event) => (e.preventDefault(), main.focus()) },
    "Skip to content",
  ),
  h(
    "header",
    { class: "topbar" },
    h(
      "a",
      { class: "brand", href: "#/experiments", "aria-label": "PEDL home" },
      h("span", { class: "brand-mark" }, "▲"),
      "PEDL",
    ),
    h("nav", { "aria-label": "Sections" }, links),
  ),
  main,
);

document.addEventListener("pedl:route", (event) => {
  const path = (event as CustomEvent<{ path: string }>).detail.path;
  nav.forEach((item, i) => {
    const link = links[i];
    if (!link) return;
    if (item.section.test(path)) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  });
});

startRouter(main, routes, (route) => new NotFoundPage(route));
