// A small hash router. Page state lives in the URL: `#/experiments?state=ACTIVE&sort=-id`.
// A page stays mounted while its key (e.g. the experiment id) stays the same and is told of
// every other change of the URL through `update`, so a new tab or filter does not rebuild it.

export interface Route {
  /** The path after `#`, without the query: `/experiments/12/visualization`. */
  path: string;
  query: URLSearchParams;
}

export interface Page {
  readonly el: HTMLElement;
  /** The URL changed but still names this page (another tab, filter, sort...). */
  update(route: Route): void;
  /** The page is leaving: stop polling, cancel requests. */
  dispose(): void;
}

export interface RouteDef {
  pattern: RegExp;
  /** Pages with the same key are the same page (only `update` is called). */
  key: (match: RegExpExecArray) => string;
  create: (match: RegExpExecArray, route: Route) => Page;
}

export type QueryValues = Record<string, string | number | readonly string[] | null | undefined>;

function encodeQuery(values: QueryValues): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) {
    if (value == null || value === "") continue;
    if (Array.isArray(value)) for (const item of value) params.append(key, item);
    else params.set(key, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : "";
}

/** The address of a route: href("/trials/4", { tab: "logs" }) === "#/trials/4?tab=logs". */
export function href(path: string, query: QueryValues = {}): string {
  return `#${path}${encodeQuery(query)}`;
}

export function currentRoute(): Route {
  const raw = location.hash.replace(/^#/, "") || "/";
  const at = raw.indexOf("?");
  const path = at < 0 ? raw : raw.slice(0, at);
  const query = new URLSearchParams(at < 0 ? "" : raw.slice(at + 1));
  return { path: path.startsWith("/") ? path : `/${path}`, query };
}

let dispatch: () => void = () => undefined;
let remountPage: () => void = () => undefined;

/** Make the current page again from the URL (its charts redrawn in the colours now in force). */
export function remount(): void {
  remountPage();
}

/** Go to `path?query`; `replace` rewrites the current history entry (filters while typing). */
export function navigate(path: string, query: QueryValues = {}, options: { replace?: boolean } = {}): void {
  const target = href(path, query);
  if (target === location.hash) return;
  if (options.replace) history.replaceState(null, "", target);
  else history.pushState(null, "", target);
  dispatch();
}

/** Change some query parameters of the current route (null removes one). */
export function setQuery(patch: QueryValues, options: { replace?: boolean } = {}): void {
  const route = currentRoute();
  const values: Record<string, string | readonly string[]> = {};
  for (const key of new Set(route.query.keys())) {
    const all = route.query.getAll(key);
    values[key] = all.length > 1 ? all : (all[0] ?? "");
  }
  for (const [key, value] of Object.entries(patch)) {
    if (value == null || value === "" || (Array.isArray(value) && value.length === 0)) delete values[key];
    else values[key] = Array.isArray(value) ? value : String(value);
  }
  navigate(route.path, values, options);
}

/** Mount the page the URL names into `outlet`, and follow the URL from then on. */
export function startRouter(outlet: HTMLElement, routes: RouteDef[], notFound: (route: Route) => Page): void {
  let current: { key: string; page: Page } | null = null;
  let lastHash: string | null = null;

  dispatch = () => {
    if (location.hash === lastHash) return;
    lastHash = location.hash;
    const route = currentRoute();
    let key = `404:${route.path}`;
    let create = () => notFound(route);
    for (const def of routes) {
      const match = def.pattern.exec(route.path);
      if (match) {
        key = def.key(match);
        create = () => def.create(match, route);
        break;
      }
    }
    if (current && current.key === key) {
      current.page.update(route);
      return;
    }
    current?.page.dispose();
    const page = create();
    current = { key, page };
    outlet.replaceChildren(page.el);
    window.scrollTo(0, 0);
    document.dispatchEvent(new CustomEvent("pedl:route", { detail: route }));
  };

  remountPage = () => {
    current?.page.dispose();
    current = null;
    lastHash = null;
    dispatch();
  };
  window.addEventListener("hashchange", () => dispatch());
  window.addEventListener("popstate", () => dispatch());
  dispatch();
}
