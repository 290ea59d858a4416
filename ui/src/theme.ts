// The charts' colours, from the stylesheet's --chart-* tokens: light, or dark when the browser
// asks for it (prefers-color-scheme; src/styles.css). A chart reads them when it is made.

export interface ChartTheme {
  /** Axis labels and lines. */
  axis: string;
  grid: string;
  ticks: string;
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

export function chartTheme(): ChartTheme {
  const style = getComputedStyle(document.documentElement);
  return {
    axis: token(style, "--chart-axis", "#5b6474"),
    grid: token(style, "--chart-grid", "#e8ebf0"),
    ticks: token(style, "--chart-tick", "#d5dae1"),
    text: token(style, "--chart-text", "#3a4250"),
    line: token(style, "--chart-line", "#6b7586"),
    halo: token(style, "--chart-halo", "#ffffff"),
  };
}
