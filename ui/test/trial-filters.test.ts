import { describe, expect, it } from "vitest";
import {
  configuredHparams,
  hparamKey,
  metricKey,
  parseRanges,
  parseValues,
  splitValues,
  withRange,
  withValues,
} from "../src/trial-filters";

describe("range filters", () => {
  it("reads each column's bounds, either end open", () => {
    const ranges = parseRanges(["hparams.lr:0.001..0.1", "metrics.val_loss:..0.5", "restarts:1..", "junk"]);
    expect(ranges.get("hparams.lr")).toEqual({ low: "0.001", high: "0.1" });
    expect(ranges.get("metrics.val_loss")).toEqual({ low: "", high: "0.5" });
    expect(ranges.get("restarts")).toEqual({ low: "1", high: "" });
    expect(ranges.has("junk")).toBe(false);
  });

  it("keeps a dotted column name whole", () => {
    expect(parseRanges(["hparams.optimizer.lr:1..2"]).get("hparams.optimizer.lr")).toEqual({ low: "1", high: "2" });
  });

  it("replaces one column's bounds and drops it when both are empty", () => {
    const start = ["hparams.lr:0.001..0.1", "metrics.acc:0.5.."];
    expect(withRange(start, "hparams.lr", { low: "0.01", high: "" })).toEqual([
      "metrics.acc:0.5..",
      "hparams.lr:0.01..",
    ]);
    expect(withRange(start, "hparams.lr", { low: " ", high: "" })).toEqual(["metrics.acc:0.5.."]);
  });
});

describe("value filters", () => {
  it("groups the values of each hyperparameter", () => {
    const values = parseValues(["hparams.opt:adam", "hparams.opt:sgd", "hparams.act:a:b"]);
    expect(values.get("hparams.opt")).toEqual(["adam", "sgd"]);
    expect(values.get("hparams.act")).toEqual(["a:b"]);
  });

  it("replaces one hyperparameter's values", () => {
    const start = ["hparams.opt:adam", "hparams.units:64"];
    expect(withValues(start, "hparams.opt", splitValues("sgd, rmsprop,"))).toEqual([
      "hparams.units:64",
      "hparams.opt:sgd",
      "hparams.opt:rmsprop",
    ]);
    expect(withValues(start, "hparams.opt", [])).toEqual(["hparams.units:64"]);
  });
});

describe("sort keys", () => {
  it("names hyperparameters and metrics as the API sorts by them", () => {
    expect(hparamKey("optimizer.lr")).toBe("hparams.optimizer.lr");
    expect(metricKey("val_loss")).toBe("metrics.val_loss");
  });
});

describe("configuredHparams", () => {
  it("names what the master sorts and filters by, nested groups dotted", () => {
    const config = {
      lr: { type: "log", minval: -4, maxval: -1 },
      batch: 32,
      optimizer: { name: { type: "categorical", vals: ["adam"] }, momentum: 0.9 },
      sizes: [1, 2],
    };
    expect(configuredHparams(config)).toEqual(["lr", "batch", "optimizer.name", "optimizer.momentum", "sizes"]);
    expect(configuredHparams(undefined)).toEqual([]);
  });
});
