// Hyperparameters as the tables show them: nested ones flattened with dots, as the trials
// summary does (`optimizer.lr`).

import { formatValue } from "./format";

export function flattenHparams(
  hparams: Record<string, unknown>,
  prefix = "",
  out: Record<string, unknown> = {},
): Record<string, unknown> {
  for (const [key, value] of Object.entries(hparams)) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (value !== null && typeof value === "object" && !Array.isArray(value))
      flattenHparams(value as Record<string, unknown>, name, out);
    else out[name] = value;
  }
  return out;
}

/** `lr=0.001, units=64` */
export function hparamsInline(hparams: Record<string, unknown>): string {
  return Object.entries(flattenHparams(hparams))
    .map(([k, v]) => `${k}=${formatValue(v)}`)
    .join(", ");
}

/** The hyperparameter names of some trials, in first-seen order. */
export function hparamNames(trials: readonly { hparams: Record<string, unknown> }[]): string[] {
  const names = new Set<string>();
  for (const trial of trials) for (const name of Object.keys(flattenHparams(trial.hparams))) names.add(name);
  return [...names];
}

/** How the config declares a hyperparameter, when it does (Determined's `type`). */
export type DeclaredType = "categorical" | "log" | "int" | "double" | "const";

/** The declared type of every hyperparameter of an experiment config, by flattened name
 * (`optimizer.lr`); nested groups without a `type` are walked into. */
export function declaredTypes(
  hyperparameters: unknown,
  prefix = "",
  out = new Map<string, DeclaredType>(),
): Map<string, DeclaredType> {
  if (!hyperparameters || typeof hyperparameters !== "object") return out;
  for (const [key, spec] of Object.entries(hyperparameters as Record<string, unknown>)) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (!spec || typeof spec !== "object" || Array.isArray(spec)) continue;
    const type = (spec as { type?: unknown }).type;
    if (typeof type === "string") out.set(name, type as DeclaredType);
    else declaredTypes(spec, name, out);
  }
  return out;
}
