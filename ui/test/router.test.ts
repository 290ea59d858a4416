import { describe, expect, it } from "vitest";
import { parseSort } from "../src/components/table";
import { href } from "../src/router";

describe("href", () => {
  it("puts the page state in the hash, repeated keys repeated, empty ones left out", () => {
    expect(href("/experiments", { state: "ACTIVE", label: ["a b", "c"], name: "", page: null })).toBe(
      "#/experiments?state=ACTIVE&label=a+b&label=c",
    );
    expect(href("/trials/4")).toBe("#/trials/4");
  });
});

describe("parseSort", () => {
  it("reads a leading - as descending", () => {
    expect(parseSort("-best_validation")).toEqual({ key: "best_validation", descending: true });
    expect(parseSort("id")).toEqual({ key: "id", descending: false });
    expect(parseSort(undefined)).toBeNull();
  });
});
