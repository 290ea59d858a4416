// Hyperparameters as the tables show them: nested ones flattened with dots, as the trials
// summary does (`optimizer.lr`).

import { formatValue } from "./format";

export function flattenHparams(hparams: Record<string, unknown>, prefix = "", out: Record<string, unknown> = {}): Record<string, unknown> {
  for (const [key, value] of Object.entries(hparams)) {
    const name = prefix ? `${prefix}.${key}` : key;
    if (value !== null && typeof value === "object" && !Array.isArray(value)) flattenHparams(value as Record<string, unknown>, name, out);
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
