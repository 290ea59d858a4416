// The paint mark the P6 benchmark measures (navigation start → first charts with data).

let marked = false;

/** Mark "pedl:charts-painted" once per page load, after the frame with the charts. */
export function markChartsPainted(): void {
  if (marked) return;
  marked = true;
  requestAnimationFrame(() => performance.mark("pedl:charts-painted"));
}
