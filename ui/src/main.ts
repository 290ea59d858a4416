// The single-page app: a header with the main sections and the page the URL names, once
// signed in (the sign-in form otherwise, and again whenever the master answers 401).

import "./styles.css";
import { ApiError, api } from "./api";
import { accountsRequired } from "./accounts";
import { forget, hasSession } from "./auth";
import { followScheme, schemeSwitch } from "./color-scheme";
import { h } from "./dom";
import { ClusterPage } from "./pages/cluster";
import { ComparePage } from "./pages/compare";
import { ExperimentListPage } from "./pages/experiment-list";
import { ExperimentPage } from "./pages/experiment";
import { ModelPage, ModelsPage } from "./pages/models";
import { NotFoundPage } from "./pages/not-found";
import { signInForm } from "./pages/sign-in";
import { TrialPage } from "./pages/trial";
import { ProjectPage, WorkspacesPage } from "./pages/workspaces";
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
  { pattern: /^\/compare\/?$/, key: () => "compare", create: (_m, route) => new ComparePage(route) },
  { pattern: /^\/models\/?$/, key: () => "models", create: () => new ModelsPage() },
  {
    pattern: /^\/models\/([^/]+)\/?$/,
    key: (m) => `model:${m[1]}`,
    create: (m) => new ModelPage(decodeURIComponent(m[1] ?? "")),
  },
  { pattern: /^\/workspaces\/?$/, key: () => "workspaces", create: () => new WorkspacesPage() },
  {
    pattern: /^\/projects\/(\d+)\/?$/,
    key: (m) => `project:${m[1]}`,
    create: (m) => new ProjectPage(Number(m[1])),
  },
];

const nav = [
  { label: "Experiments", href: "#/experiments", section: /^\/(experiments|trials|$)/ },
  { label: "Workspaces", href: "#/workspaces", section: /^\/(workspaces|projects)/ },
  { label: "Models", href: "#/models", section: /^\/models/ },
  { label: "Cluster", href: "#/cluster", section: /^\/cluster/ },
];

followScheme();
const accounts = accountsRequired();

const links = nav.map((item) => h("a", { href: item.href }, item.label));
const main = h("main", { id: "main", tabindex: -1 });
const account = h("div", { class: "account", "data-testid": "account" });
// The cluster-wide message (`det master cluster-message set`), under the header while it shows.
const banner = h("div", { class: "cluster-message", role: "status", "data-testid": "cluster-message", hidden: true });
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
    schemeSwitch(),
    account,
  ),
  banner,
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

function signOut(): void {
  api
    .logout()
    .catch(() => undefined)
    .finally(() => {
      forget();
      location.reload();
    });
}

function showAccount(name: string): void {
  account.replaceChildren(
    h("span", { class: "account-name", "data-testid": "account-name" }, name),
    h("button", { type: "button", class: "sign-out", onclick: signOut }, "Sign out"),
  );
}

/** Show the cluster-wide message while it is in its time window (once, at the start). */
function showClusterMessage(): void {
  api.clusterMessage().then(
    ({ cluster_message: message }) => {
      const now = Date.now();
      const shows =
        message != null &&
        Date.parse(message.start_time) <= now &&
        (message.end_time == null || Date.parse(message.end_time) > now);
      banner.textContent = shows ? message.message : "";
      banner.hidden = !shows;
    },
    () => undefined,
  );
}

/** The app, for the user `name` (none: a master without accounts). */
function start(name?: string): void {
  if (name) showAccount(name);
  showClusterMessage();
  startRouter(main, routes, (route) => new NotFoundPage(route));
}

// A 401 (expired or revoked token): back to the sign-in form, on the same page.
document.addEventListener("pedl:signed-out", () => location.reload());

if (hasSession()) {
  // Signed in, in this tab or another: the page at once, the name when the master says it (a
  // 401 here or anywhere signs out, src/api.ts).
  start();
  api.me().then(
    (me) => showAccount(me.username),
    () => undefined,
  );
} else if (accounts === true) {
  // Not signed in on a master with accounts: the form, asking the master nothing first.
  signInForm(main, start);
} else {
  // A master without accounts (`pedl master --no-auth`) answers without a session.
  api.me().then(
    () => start(),
    (err: unknown) => {
      if (err instanceof ApiError && err.status === 401) signInForm(main, start);
      else start();
    },
  );
}
