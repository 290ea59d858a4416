// Selecting trials in the charts: a click picks one trial (shift, ctrl or cmd: adds it), a
// box dragged on a scatter plot picks the trials inside. The hit-testing of many points does
// not scan them all: they are sorted into a uniform grid of square cells (a counting sort,
// O(n) to build), so the point nearest the pointer and the points inside a box are found
// from the few cells they touch.

export class PointGrid {
  private readonly x0: number;
  private readonly y0: number;
  private readonly cols: number;
  private readonly rows: number;
  /** The points of cell c are order[start[c]] .. order[start[c + 1] - 1]. */
  private readonly start: Uint32Array;
  private readonly order: Uint32Array;

  /** Points k = 0..n-1 at (xs[k], ys[k]); NaN coordinates are left out. */
  constructor(
    private readonly xs: ArrayLike<number>,
    private readonly ys: ArrayLike<number>,
    private readonly cell: number,
  ) {
    const n = xs.length;
    let xMin = Infinity;
    let xMax = -Infinity;
    let yMin = Infinity;
    let yMax = -Infinity;
    for (let k = 0; k < n; k++) {
      const x = xs[k] as number;
      const y = ys[k] as number;
      if (Number.isNaN(x) || Number.isNaN(y)) continue;
      if (x < xMin) xMin = x;
      if (x > xMax) xMax = x;
      if (y < yMin) yMin = y;
      if (y > yMax) yMax = y;
    }
    const empty = xMin > xMax;
    this.x0 = empty ? 0 : xMin;
    this.y0 = empty ? 0 : yMin;
    this.cols = empty ? 1 : Math.floor((xMax - xMin) / cell) + 1;
    this.rows = empty ? 1 : Math.floor((yMax - yMin) / cell) + 1;
    const cellOf = new Int32Array(n);
    const counts = new Uint32Array(this.cols * this.rows + 1);
    for (let k = 0; k < n; k++) {
      const c = this.cellAt(xs[k] as number, ys[k] as number);
      cellOf[k] = c;
      if (c >= 0) counts[c + 1] = (counts[c + 1] as number) + 1;
    }
    for (let c = 1; c < counts.length; c++) counts[c] = (counts[c] as number) + (counts[c - 1] as number);
    this.start = counts.slice();
    const next = counts;
    this.order = new Uint32Array(n);
    for (let k = 0; k < n; k++) {
      const c = cellOf[k] as number;
      if (c < 0) continue;
      this.order[next[c] as number] = k;
      next[c] = (next[c] as number) + 1;
    }
  }

  /** The point nearest (x, y) within `radius`, or -1; `bonus(k)` (pixels) favours some
   * points (a highlighted one wins a near tie). */
  nearest(x: number, y: number, radius: number, bonus: (k: number) => number = () => 0): number {
    let found = -1;
    let foundD = radius;
    this.visit(x - radius, y - radius, x + radius, y + radius, (k) => {
      const d = Math.hypot((this.xs[k] as number) - x, (this.ys[k] as number) - y) - bonus(k);
      if (d < foundD) {
        foundD = d;
        found = k;
      }
    });
    return found;
  }

  /** The points inside the box (any two opposite corners), in index order. */
  inBox(ax: number, ay: number, bx: number, by: number): number[] {
    const [left, right] = ax <= bx ? [ax, bx] : [bx, ax];
    const [top, bottom] = ay <= by ? [ay, by] : [by, ay];
    const out: number[] = [];
    this.visit(left, top, right, bottom, (k) => {
      const x = this.xs[k] as number;
      const y = this.ys[k] as number;
      if (x >= left && x <= right && y >= top && y <= bottom) out.push(k);
    });
    return out.sort((a, b) => a - b);
  }

  private cellAt(x: number, y: number): number {
    if (Number.isNaN(x) || Number.isNaN(y)) return -1;
    const col = Math.floor((x - this.x0) / this.cell);
    const row = Math.floor((y - this.y0) / this.cell);
    return row * this.cols + col;
  }

  /** Call `f` with every point of the cells that the box touches. */
  private visit(left: number, top: number, right: number, bottom: number, f: (k: number) => void): void {
    const c0 = Math.max(0, Math.floor((left - this.x0) / this.cell));
    const c1 = Math.min(this.cols - 1, Math.floor((right - this.x0) / this.cell));
    const r0 = Math.max(0, Math.floor((top - this.y0) / this.cell));
    const r1 = Math.min(this.rows - 1, Math.floor((bottom - this.y0) / this.cell));
    for (let r = r0; r <= r1; r++) {
      for (let c = c0; c <= c1; c++) {
        const cell = r * this.cols + c;
        const end = this.start[cell + 1] as number;
        for (let at = this.start[cell] as number; at < end; at++) f(this.order[at] as number);
      }
    }
  }
}

/** Trial ids picked by a click or a box: `additive` (shift, ctrl or cmd held) toggles a
 * single pick in `current` or adds a box's; otherwise the picks replace it. */
export function nextSelection(current: readonly number[], picked: readonly number[], additive: boolean): number[] {
  if (!additive) return [...new Set(picked)].sort((a, b) => a - b);
  const next = new Set(current);
  if (picked.length === 1 && next.has(picked[0] as number)) next.delete(picked[0] as number);
  else for (const id of picked) next.add(id);
  return [...next].sort((a, b) => a - b);
}

/** Whether an event asks to add to the selection rather than replace it. */
export function isAdditive(event: { shiftKey: boolean; ctrlKey: boolean; metaKey: boolean }): boolean {
  return event.shiftKey || event.ctrlKey || event.metaKey;
}

/** The outline of a selected trial's dot or line in every chart. */
export const SELECTED_COLOR = "#d6336c";
