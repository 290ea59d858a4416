// A JSON document shown as highlighted YAML (keys, strings, numbers, booleans and nulls in
// their own colours). Short lists of scalars stay on one line: `vals: [16, 32]`.

import { h } from "../dom";

type Token = { text: string; kind?: "key" | "string" | "number" | "literal" | "punct" };
type Line = Token[];

const PLAIN = /^[A-Za-z_./][\w ./@+-]*$/;
const LOOKS_LIKE_OTHER =
  /^(true|false|yes|no|on|off|null|~|[-+]?(\d[\d_]*(\.\d*)?|\.\d+)([eE][-+]?\d+)?|\.inf|\.nan)$/i;

function scalar(value: unknown): Token {
  if (value === null || value === undefined) return { text: "null", kind: "literal" };
  if (typeof value === "boolean") return { text: String(value), kind: "literal" };
  if (typeof value === "number") return { text: String(value), kind: "number" };
  const text = String(value);
  const plain =
    PLAIN.test(text) &&
    !LOOKS_LIKE_OTHER.test(text) &&
    !text.endsWith(" ") &&
    !text.includes(": ") &&
    !text.includes(" #");
  return { text: plain ? text : JSON.stringify(text), kind: "string" };
}

function isScalar(value: unknown): boolean {
  return value === null || typeof value !== "object";
}

function keyToken(key: string): Token {
  const token = scalar(key);
  return { text: token.kind === "string" ? token.text : JSON.stringify(key), kind: "key" };
}

function emit(value: unknown, indent: string, lines: Line[], prefix: Token[]): void {
  if (isScalar(value)) {
    lines.push([...prefix, scalar(value)]);
    return;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) {
      lines.push([...prefix, { text: "[]", kind: "punct" }]);
      return;
    }
    if (value.every(isScalar) && value.length <= 12) {
      const inline: Token[] = [{ text: "[", kind: "punct" }];
      value.forEach((item, i) => {
        if (i > 0) inline.push({ text: ", ", kind: "punct" });
        inline.push(scalar(item));
      });
      inline.push({ text: "]", kind: "punct" });
      lines.push([...prefix, ...inline]);
      return;
    }
    if (prefix.length > 0) lines.push(prefix);
    for (const item of value) {
      const dash: Token[] = [{ text: `${indent}- `, kind: "punct" }];
      if (isScalar(item) || Array.isArray(item)) emit(item, `${indent}  `, lines, dash);
      else emitMapping(item as Record<string, unknown>, `${indent}  `, lines, dash);
    }
    return;
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) {
    lines.push([...prefix, { text: "{}", kind: "punct" }]);
    return;
  }
  if (prefix.length > 0) lines.push(prefix);
  emitMapping(value as Record<string, unknown>, indent, lines, []);
}

/** A mapping's lines; the first may continue `firstPrefix` (a list item's dash). */
function emitMapping(value: Record<string, unknown>, indent: string, lines: Line[], firstPrefix: Token[]): void {
  Object.entries(value).forEach(([key, item], i) => {
    const lead: Token[] = i === 0 && firstPrefix.length > 0 ? firstPrefix : [{ text: indent }];
    const prefix: Token[] = [...lead, keyToken(key), { text: ": ", kind: "punct" }];
    if (isScalar(item) || (Array.isArray(item) && (item.length === 0 || (item.every(isScalar) && item.length <= 12)))) {
      emit(item, `${indent}  `, lines, prefix);
    } else if (!Array.isArray(item) && Object.keys(item as object).length === 0) {
      lines.push([...prefix, { text: "{}", kind: "punct" }]);
    } else {
      lines.push([...lead, keyToken(key), { text: ":", kind: "punct" }]);
      emit(item, `${indent}  `, lines, []);
    }
  });
}

/** YAML text of a JSON value (for copying). */
export function toYaml(value: unknown): string {
  return lines(value)
    .map((line) => line.map((t) => t.text).join(""))
    .join("\n");
}

function lines(value: unknown): Line[] {
  const out: Line[] = [];
  emit(value, "", out, []);
  return out;
}

/** The highlighted YAML of `value` in a <pre>. */
export function yamlView(value: unknown): HTMLElement {
  const code = h("code", {});
  for (const line of lines(value)) {
    for (const token of line) {
      code.append(token.kind ? h("span", { class: `y-${token.kind}` }, token.text) : token.text);
    }
    code.append("\n");
  }
  return h("pre", { class: "yaml", tabindex: 0, "aria-label": "Experiment configuration (YAML)" }, code);
}
