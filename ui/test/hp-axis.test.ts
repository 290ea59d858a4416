import { describe, expect, it } from "vitest";
import { buildAxis, metricAxis } from "../src/components/hp-axis";
import { declaredTypes, flattenHparams } from "../src/hparams";

describe("buildAxis", () => {
  it("leaves out a value that never varies", () => {
    expect(buildAxis("batch", [32, 32, 32])).toBeNull();
  });

  it("puts positive numbers over two decades on a log axis", () => {
    const axis = buildAxis("lr", [1e-4, 1e-3, 1e-2]);
    expect(axis?.kind).toBe("log");
    expect(axis?.normalized(1)).toBeCloseTo(0.5);
  });

  it("keeps a narrow range linear unless the config declares log", () => {
    expect(buildAxis("dropout", [0.1, 0.3, 0.5])?.kind).toBe("linear");
    expect(buildAxis("lr", [0.01, 0.03, 0.05], "log")?.kind).toBe("log");
  });

  it("orders categories, numbers by value", () => {
    const axis = buildAxis("filters", [32, 8, 16, 8], "categorical");
    expect(axis?.kind).toBe("categorical");
    expect(axis?.categories).toEqual(["8", "16", "32"]);
    expect(axis?.position(0)).toBe(2);
    expect(axis?.normalized(2)).toBeCloseTo(0.5);
  });

  it("has no place for a trial without the value", () => {
    const axis = buildAxis("opt", ["adam", null, "sgd"]);
    expect(axis?.normalized(1)).toBeNull();
  });

  it("keeps a constant metric, centred", () => {
    expect(metricAxis("acc", [0.9, 0.9, null]).normalized(0)).toBe(0.5);
  });
});

describe("hyperparameters", () => {
  it("are flattened with dots", () => {
    expect(flattenHparams({ lr: 0.1, layers: { depth: 3, act: "relu" } })).toEqual({
      lr: 0.1,
      "layers.depth": 3,
      "layers.act": "relu",
    });
  });

  it("have the types their config declares, nested groups walked into", () => {
    const types = declaredTypes({
      global_batch_size: { type: "const", val: 32 },
      lr: { type: "log", minval: -4, maxval: -1 },
      layers: { depth: { type: "int", minval: 1, maxval: 6 } },
    });
    expect(Object.fromEntries(types)).toEqual({ global_batch_size: "const", lr: "log", "layers.depth": "int" });
  });
});
