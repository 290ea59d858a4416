import { describe, expect, it } from "vitest";
import {
  BEST,
  GREYED,
  NOT_DRAWN,
  type LinesScene,
  type ParallelScene,
  type Scene,
  type ScatterScene,
  SELECTED,
  paintScene,
  sceneBuffers,
} from "../src/components/chart-paint";

/** A canvas whose 2D context records what is drawn: each stroke or fill with its style and
 * the points of its path, and the size the canvas was given. */
function recordingCanvas(): { width: number; height: number; getContext(): unknown; marks: string[] } {
  const marks: string[] = [];
  let path: string[] = [];
  const ctx = {
    strokeStyle: "",
    fillStyle: "",
    lineWidth: 1,
    globalAlpha: 1,
    font: "",
    textAlign: "",
    textBaseline: "",
    lineJoin: "",
    lineCap: "",
    setLineDash: () => undefined,
    translate: () => undefined,
    rotate: () => undefined,
    setTransform: () => undefined,
    clearRect: () => undefined,
    save: () => undefined,
    restore: () => undefined,
    clip: () => undefined,
    beginPath: () => (path = []),
    moveTo: (x: number, y: number) => path.push(`M${x},${y}`),
    lineTo: (x: number, y: number) => path.push(`L${x},${y}`),
    rect: (x: number, y: number) => path.push(`R${x},${y}`),
    arc: (x: number, y: number) => path.push(`A${x},${y}`),
    stroke: () => marks.push(`stroke ${ctx.strokeStyle} ${ctx.lineWidth} ${path.join(" ")}`),
    fill: () => marks.push(`fill ${ctx.fillStyle} ${path.join(" ")}`),
    fillRect: () => undefined,
    fillText: () => undefined,
    strokeText: () => undefined,
    measureText: (text: string) => ({ width: text.length * 6 }),
  };
  return { width: 0, height: 0, getContext: () => ctx, marks };
}

const theme = { text: "#111", line: "#222", halo: "#fff", grid: "#eee" };

describe("paintScene", () => {
  it("draws the parallel coordinates' buckets in order, rows in order within one, the best last", () => {
    // Rows 0..4 over two axes: row 2 in bucket 2, rows 0 and 3 in bucket 1, row 4 grey, row 1
    // the best.
    const scene: ParallelScene = {
      kind: "parallel",
      width: 100,
      height: 50,
      ratio: 2,
      xs: [10, 90],
      top: 5,
      plotH: 40,
      ys: Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, Number.NaN]),
      axisCount: 2,
      bucket: Uint8Array.from([1, NOT_DRAWN, 2, 1, 0]),
      strokes: ["grey", "worse", "better"],
      many: true,
      best: [[1, "best"]],
      axes: [],
      theme,
    };
    const canvas = recordingCanvas();
    paintScene(canvas, scene);
    expect([canvas.width, canvas.height]).toEqual([200, 100]);
    expect(canvas.marks).toEqual([
      "stroke grey 0.5 M10,9", // row 4: no value at the second axis
      "stroke worse 0.5 M10,1 L90,2 M10,7 L90,8",
      "stroke better 0.5 M10,5 L90,6",
      "stroke rgba(29, 36, 48, 0.85) 5.5 M10,3 L90,4",
      "stroke best 3 M10,3 L90,4",
    ]);
  });

  it("draws few scatter dots as squares by layer, the best as circles, the selected outlined", () => {
    const scene: ScatterScene = {
      kind: "scatter",
      canvasWidth: 40,
      canvasHeight: 30,
      ratio: 1,
      bbox: { left: 0, top: 0, width: 40, height: 30 },
      cx: Float64Array.from([10, 20, 30]),
      cy: Float64Array.from([5, 15, 25]),
      flags: Uint8Array.from([GREYED, BEST | SELECTED, 0]),
    };
    const canvas = recordingCanvas();
    paintScene(canvas, scene);
    expect([canvas.width, canvas.height]).toEqual([40, 30]);
    expect(canvas.marks).toEqual([
      "fill rgba(163, 171, 184, 0.45) R7.4,2.4",
      "fill rgba(78, 121, 167, 0.65) R27.4,22.4",
      "fill #e4572e A20,15",
      "stroke #ffffff 1.5 A20,15",
      expect.stringMatching(/^stroke .* 2 M26,15 A20,15$/),
    ]);
  });

  it("draws each line's points in order in its own style, dots where it has few, the last on top", () => {
    // Two series: three points (a line), then one point (a dot).
    const scene: LinesScene = {
      kind: "lines",
      width: 100,
      height: 60,
      ratio: 1,
      theme,
      xTicks: [],
      yTicks: [],
      xLabel: "Batches",
      pad: { left: 10, right: 10, top: 10, bottom: 10 },
      xy: Float32Array.from([10, 50, 50, 30, 90, 10, 70, 20]),
      starts: Uint32Array.from([0, 3, 4]),
      styles: [
        { color: "#aaa", width: 1, dot: 0 },
        { color: "#e4572e", width: 2.5, dot: 3.5 },
      ],
    };
    const canvas = recordingCanvas();
    paintScene(canvas, scene);
    expect([canvas.width, canvas.height]).toEqual([100, 60]);
    // After the frame (its axis lines): the clip, then the series in order.
    expect(canvas.marks.slice(-3)).toEqual([
      "stroke #aaa 1 M10,50 L50,30 L90,10",
      "stroke #e4572e 2.5 M70,20",
      "fill #e4572e M73.5,20 A70,20",
    ]);
  });

  it("hands over each typed array's buffer once", () => {
    const shared = new Float64Array(6);
    const scene: Scene = {
      kind: "scatter",
      canvasWidth: 1,
      canvasHeight: 1,
      ratio: 1,
      bbox: { left: 0, top: 0, width: 1, height: 1 },
      cx: shared.subarray(0, 3),
      cy: shared.subarray(3),
      flags: new Uint8Array(3),
    };
    expect(sceneBuffers(scene)).toEqual([shared.buffer, scene.flags.buffer]);
  });
});
