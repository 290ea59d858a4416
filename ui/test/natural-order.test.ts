import { describe, expect, it } from "vitest";
import { naturalCompare } from "../src/natural-order";

describe("naturalCompare", () => {
  it("orders ASCII names as a numeric collator does", () => {
    const collator = new Intl.Collator("en", { numeric: true });
    const alphabet = "aAbByYzZ0123456789 -.";
    let seed = 4242;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const word = () => {
      let text = "";
      const length = 1 + Math.floor(next() * 6);
      for (let k = 0; k < length; k++) text += alphabet[Math.floor(next() * alphabet.length)];
      return text;
    };
    for (let n = 0; n < 5000; n++) {
      const a = word();
      const b = next() < 0.3 ? a.toUpperCase() : word();
      const expected = Math.sign(collator.compare(a, b));
      if (expected === 0) continue; // equal to the collator: any order is its order
      expect(Math.sign(naturalCompare(a, b)), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).toBe(expected);
    }
  });

  it("sorts names with numbers by their values", () => {
    const names = ["run10", "Run2", "run1", "adam", "SGD", "rmsprop", "run02"];
    expect([...names].sort(naturalCompare)).toEqual(["adam", "rmsprop", "run1", "run02", "Run2", "run10", "SGD"]);
  });

  it("is a total order: antisymmetric, and zero only for the same text", () => {
    const texts = ["a", "A", "a1", "a01", "a-1", "a 1", "b", "B2", "", "é", "z"];
    for (const a of texts)
      for (const b of texts) {
        expect(Math.sign(naturalCompare(a, b)) + Math.sign(naturalCompare(b, a))).toBe(0);
        if (a !== b) expect(naturalCompare(a, b)).not.toBe(0);
      }
  });
});
