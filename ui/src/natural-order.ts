// Text in the order people read lists of names in, as a collator with numeric ordering sorts
// ASCII: runs of digits by their value (run2 before run10), letters regardless of case (then
// lower case first), spaces and punctuation before digits, digits before letters. Written out
// rather than `localeCompare(…, { numeric: true })`: ICU's collator, made on first use, costs a
// page load ~10 ms of its main thread. Letters beyond ASCII sort by code point, after z.

const enum Kind {
  Other,
  Digit,
  Letter,
}

function kind(code: number): Kind {
  if (code >= 48 && code <= 57) return Kind.Digit;
  if ((code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code > 127) return Kind.Letter;
  return Kind.Other;
}

function folded(code: number): number {
  return code >= 65 && code <= 90 ? code + 32 : code;
}

/** Where the run of digits starting at `from` ends. */
function digitsEnd(text: string, from: number): number {
  let end = from;
  while (end < text.length && kind(text.charCodeAt(end)) === Kind.Digit) end += 1;
  return end;
}

/** Negative, zero or positive as `a` sorts before, with or after `b` (see the module). */
export function naturalCompare(a: string, b: string): number {
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(j);
    const ka = kind(ca);
    const kb = kind(cb);
    if (ka !== kb) return ka - kb;
    if (ka === Kind.Digit) {
      const ea = digitsEnd(a, i);
      const eb = digitsEnd(b, j);
      while (i < ea - 1 && a.charCodeAt(i) === 48) i += 1; // leading zeros: 007 is 7
      while (j < eb - 1 && b.charCodeAt(j) === 48) j += 1;
      if (ea - i !== eb - j) return ea - i - (eb - j); // more digits: a larger value
      for (; i < ea; i += 1, j += 1) {
        const d = a.charCodeAt(i) - b.charCodeAt(j);
        if (d !== 0) return d;
      }
      continue;
    }
    const d = folded(ca) - folded(cb);
    if (d !== 0) return d;
    i += 1;
    j += 1;
  }
  if (i < a.length || j < b.length) return i < a.length ? 1 : -1; // a prefix first
  // Equal but for case (or leading zeros): lower case first, then by code point.
  for (let k = 0; k < Math.min(a.length, b.length); k++) {
    const ca = a.charCodeAt(k);
    const cb = b.charCodeAt(k);
    if (ca !== cb) return folded(ca) === folded(cb) ? cb - ca : ca - cb;
  }
  return a.length - b.length;
}
