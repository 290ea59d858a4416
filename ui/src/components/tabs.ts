// Tabs as links (each tab is an address), with the tab pattern's roles and arrow keys.

import { h } from "../dom";

export interface TabDef {
  id: string;
  label: string;
  href: string;
}

export function tabBar(tabs: readonly TabDef[], active: string, label: string): HTMLElement {
  const links = tabs.map((tab) =>
    h(
      "a",
      {
        href: tab.href,
        role: "tab",
        id: `tab-${tab.id}`,
        class: tab.id === active ? "tab active" : "tab",
        "aria-selected": tab.id === active ? "true" : "false",
        "aria-controls": "tab-panel",
        tabindex: tab.id === active ? 0 : -1,
        "data-testid": `tab-${tab.id}`,
      },
      tab.label,
    ),
  );
  const bar = h("nav", { class: "tabs", role: "tablist", "aria-label": label }, links);
  bar.addEventListener("keydown", (event) => {
    const index = links.indexOf(document.activeElement as HTMLAnchorElement);
    if (index < 0) return;
    let next = -1;
    if (event.key === "ArrowRight") next = (index + 1) % links.length;
    else if (event.key === "ArrowLeft") next = (index - 1 + links.length) % links.length;
    else if (event.key === "Home") next = 0;
    else if (event.key === "End") next = links.length - 1;
    if (next < 0) return;
    event.preventDefault();
    links[next]?.focus();
  });
  return bar;
}

/** The panel the tabs control. */
export function tabPanel(active: string): HTMLElement {
  return h("section", { class: "tab-panel", id: "tab-panel", role: "tabpanel", "aria-labelledby": `tab-${active}` });
}
