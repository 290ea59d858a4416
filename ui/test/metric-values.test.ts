import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { NON_FINITE, metricNumber } from "../src/api";

// The names the master writes for non-finite metric values, as its OpenAPI document (ui/openapi.json,
// generated from pedl.vocabulary's NON_FINITE_NAMES; tests/ui/test_api_types.py keeps it current) says.
const openapi = JSON.parse(readFileSync(new URL("../openapi.json", import.meta.url), "utf-8")) as {
  components: { schemas: { MetricPublic: { properties: { metrics: { additionalProperties: { anyOf: object[] } } } } } };
};
const names = openapi.components.schemas.MetricPublic.properties.metrics.additionalProperties.anyOf.flatMap((schema) =>
  "enum" in schema ? (schema.enum as string[]) : [],
);

describe("metricNumber", () => {
  it("decodes exactly the names the master writes", () => {
    expect(names).toEqual(["NaN", "Infinity", "-Infinity"]);
    expect(Object.keys(NON_FINITE).sort()).toEqual([...names].sort());
  });

  it.each([
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["-Infinity", Number.NEGATIVE_INFINITY],
  ])("reads %s as %s", (name, value) => {
    expect(metricNumber(name)).toBe(value);
  });

  it("keeps numbers and answers null for anything else", () => {
    expect(metricNumber(0.25)).toBe(0.25);
    expect(metricNumber(-3)).toBe(-3);
    expect(metricNumber(null)).toBeNull();
    expect(metricNumber(undefined)).toBeNull();
    expect(metricNumber("nan")).toBeNull();
    expect(metricNumber("inf")).toBeNull();
    expect(metricNumber("toString")).toBeNull();
    expect(metricNumber("0.5")).toBeNull();
  });
});
