// The charts' colours, from the stylesheet's --chart-* tokens: light, or dark when the browser
// asks for it (the page's data-theme; src/color-scheme.ts, src/styles.css). Read once per
// scheme (`chartTheme`).

export interface ChartTheme {
  /** Axis labels (the line charts', the scatter plots'). */
  axis: string;
  grid: string;
  /** Text drawn on a canvas (parallel coordinates' names and ticks). */
  text: string;
  /** Axis lines drawn on a canvas. */
  line: string;
  /** The halo behind canvas text and around markers: the chart's background. */
  halo: string;
}

function token(style: CSSStyleDeclaration, name: string, fallback: string): string {
  return style.getPropertyValue(name).trim() || fallback;
}

let cached: { scheme: string | undefined; theme: ChartTheme } | null = null;

/** The charts' colours for the scheme in force (<html data-theme>). Read from the stylesheet
 * once per scheme: reading a computed style makes the browser bring the page's style up to
 * date first, which each of a page's many charts would otherwise pay for as it draws. */
export function chartTheme(): ChartTheme {
  const scheme = document.documentElement.dataset.theme;
  if (cached && cached.scheme === scheme) return cached.theme;
  const style = getComputedStyle(document.documentElement);
  const theme = {
    axis: token(style, "--chart-axis", "#5b6474"),
    grid: token(style, "--chart-grid", "#e8ebf0"),
    text: token(style, "--chart-text", "#3a4250"),
    line: token(style, "--chart-line", "#6b7586"),
    halo: token(style, "--chart-halo", "#ffffff"),
  };
  // Kept only once the stylesheet is in (its tokens found), not its fallbacks.
  if (style.getPropertyValue("--chart-axis").trim()) cached = { scheme, theme };
  return theme;
}
