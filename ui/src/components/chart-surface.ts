// A canvas whose drawing happens off the page's main thread: handed over to one worker for the
// page (chart.worker.ts) with `transferControlToOffscreen`, then drawn by sending it scenes
// (chart-paint.ts; their typed arrays are transferred, not copied). Where the browser cannot
// (no OffscreenCanvas, as in a test's DOM), where the worker fails to start, or where
// localStorage's "pedl:charts-on-main" is "1" (to compare), the same scenes are drawn on the
// canvas on the main thread, as before. A scatter plot is sent as its columns (`layOut`): the
// worker lays it out as well. `paint` and `layOut` resolve once the plot is drawn; the canvas'
// `data-painted` counts the scenes drawn on it (the browser tests wait for it).

import { h } from "../dom";
import { type Scene, paintScene, sceneBuffers } from "./chart-paint";
import type { FromWorker, ToWorker } from "./chart.worker";
import { type ScatterInfo, type ScatterInput, type ScatterLayout, layoutScatter } from "./scatter-layout";

const ON_MAIN_KEY = "pedl:charts-on-main";

let worker: Worker | null = null;
let failed = false;
let nextId = 1;
const surfaces = new Map<number, ChartSurface>();

/** Whether canvases are drawn by the worker: the browser can, and nobody asked otherwise. */
export function paintsOffMainThread(): boolean {
  if (failed) return false;
  if (
    typeof Worker === "undefined" ||
    typeof OffscreenCanvas === "undefined" ||
    typeof HTMLCanvasElement === "undefined" ||
    typeof HTMLCanvasElement.prototype.transferControlToOffscreen !== "function"
  )
    return false;
  try {
    return window.localStorage?.getItem(ON_MAIN_KEY) !== "1";
  } catch {
    return true; // storage refused: the default
  }
}

function chartWorker(): Worker | null {
  if (failed) return null;
  if (!worker) {
    try {
      worker = new Worker(new URL("./chart.worker.ts", import.meta.url), { type: "module" });
    } catch {
      failed = true;
      return null;
    }
    worker.onmessage = ({ data }: MessageEvent<FromWorker>) => surfaces.get(data.id)?.painted(data);
    // The script did not load (or failed as it started): every canvas is drawn here instead.
    worker.onerror = (event) => {
      event.preventDefault();
      console.error("The charts' worker failed; drawing them on the page instead.", event.message);
      failed = true;
      worker?.terminate();
      worker = null;
      for (const surface of [...surfaces.values()]) surface.toMainThread();
    };
  }
  return worker;
}

function post(message: ToWorker, transfer: Transferable[] = []): void {
  worker?.postMessage(message, transfer);
}

export class ChartSurface {
  /** The canvas (another element after a fallback to the main thread). */
  el: HTMLCanvasElement;
  private readonly id = nextId++;
  private offscreen = false;
  private seq = 0;
  private drawn = 0;
  private pending: [seq: number, done: (info?: ScatterInfo) => void][] = [];

  /** `repaint`: draw the chart again (after a fallback to the main thread, on a new canvas). */
  constructor(
    private readonly className: string,
    private readonly repaint: () => void,
  ) {
    this.el = h("canvas", { class: className, "data-painted": 0 });
    const target = paintsOffMainThread() ? chartWorker() : null;
    if (target) {
      const canvas = this.el.transferControlToOffscreen();
      surfaces.set(this.id, this);
      post({ op: "attach", id: this.id, canvas }, [canvas]);
      this.offscreen = true;
      this.el.dataset.offscreen = "true";
    }
  }

  /** Whether the worker draws this canvas (a scene's typed arrays are then handed over). */
  get offMainThread(): boolean {
    return this.offscreen;
  }

  /** Draw `scene` (its typed arrays are handed over: the caller keeps none of them); resolves
   * once it is drawn. The canvas takes the scene's size (CSS pixels). */
  paint(scene: Scene): Promise<void> {
    const [width, height] =
      scene.kind === "scatter"
        ? [scene.canvasWidth / scene.ratio, scene.canvasHeight / scene.ratio]
        : [scene.width, scene.height];
    this.el.style.width = `${width}px`;
    this.el.style.height = `${height}px`;
    const seq = ++this.seq;
    if (!this.offscreen) {
      paintScene(this.el, scene);
      this.markDrawn(seq);
      return Promise.resolve();
    }
    post({ op: "paint", id: this.id, seq, scene }, sceneBuffers(scene));
    return new Promise((resolve) => this.pending.push([seq, () => resolve()]));
  }

  /** Lay a scatter plot out from `input` and draw it: by the worker where it draws this canvas
   * (the input's columns are copied to it, not handed over), else here. Resolves with the
   * plot's counts once drawn, and with the layout where it was made here; with neither where
   * the worker failed first (the plot is drawn again on the page: `repaint`). */
  layOut(input: ScatterInput): Promise<{ info?: ScatterInfo; layout?: ScatterLayout }> {
    this.el.style.width = `${input.width}px`;
    this.el.style.height = `${input.height}px`;
    const seq = ++this.seq;
    if (!this.offscreen) {
      const layout = layoutScatter(input);
      paintScene(this.el, layout.scene);
      this.markDrawn(seq);
      return Promise.resolve({ info: layout.info, layout });
    }
    post({ op: "scatter", id: this.id, seq, input });
    return new Promise((resolve) => this.pending.push([seq, (info) => resolve({ info })]));
  }

  /** The worker drew scene `seq` (and every one before it). */
  painted({ seq, error, info }: FromWorker): void {
    if (error) console.error("A chart could not be drawn:", error);
    this.markDrawn(seq, info);
  }

  private markDrawn(seq: number, info?: ScatterInfo): void {
    this.drawn = Math.max(this.drawn, seq);
    this.el.dataset.painted = String(this.drawn);
    const done = this.pending.filter(([s]) => s <= seq);
    this.pending = this.pending.filter(([s]) => s > seq);
    // The counts are the latest scene's; an earlier one's caller gets none.
    for (const [s, resolve] of done) resolve(s === seq ? info : undefined);
  }

  /** The worker failed: a new canvas in this one's place, drawn here from now on. */
  toMainThread(): void {
    surfaces.delete(this.id);
    const fresh = h("canvas", { class: this.className, "data-painted": 0 });
    fresh.style.cssText = this.el.style.cssText;
    this.el.replaceWith(fresh);
    this.el = fresh;
    this.offscreen = false;
    this.repaint();
    this.markDrawn(this.seq);
  }

  dispose(): void {
    if (this.offscreen) post({ op: "detach", id: this.id });
    surfaces.delete(this.id);
    this.markDrawn(this.seq);
  }
}
