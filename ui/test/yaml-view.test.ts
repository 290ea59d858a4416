import { describe, expect, it } from "vitest";
import { toYaml } from "../src/components/yaml-view";

describe("toYaml", () => {
  it("writes a config as block YAML, short scalar lists inline", () => {
    const config = {
      name: "digits",
      hyperparameters: { lr: { type: "log", minval: -3.5 }, filters: { type: "categorical", vals: [16, 32] } },
      labels: [],
      entrypoint: null,
      searcher: { name: "random", smaller_is_better: false },
    };
    expect(toYaml(config)).toBe(
      [
        "name: digits",
        "hyperparameters:",
        "  lr:",
        "    type: log",
        "    minval: -3.5",
        "  filters:",
        "    type: categorical",
        "    vals: [16, 32]",
        "labels: []",
        "entrypoint: null",
        "searcher:",
        "  name: random",
        "  smaller_is_better: false",
      ].join("\n"),
    );
  });

  it("quotes strings that would read as something else", () => {
    expect(toYaml({ a: "true", b: "1.5", c: "x: y", d: "" })).toBe('a: "true"\nb: "1.5"\nc: "x: y"\nd: ""');
  });

  it("writes lists of mappings with dashes", () => {
    expect(toYaml({ bind_mounts: [{ host_path: "/data", read_only: true }] })).toBe(
      "bind_mounts:\n  - host_path: /data\n    read_only: true",
    );
  });
});
