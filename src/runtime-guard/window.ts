/**
 * The `window` query parameter of the reconciliation and observations endpoints (spec Limits, Errors 2):
 * default 1h, clamped to 5m..24h, and an unparseable value falls back to 1h without an error.
 */
import type { ReconciliationWindow } from './types.js';

export const DEFAULT_WINDOW_SECONDS = 3600;
export const MIN_WINDOW_SECONDS = 300;
export const MAX_WINDOW_SECONDS = 86_400;

const UNIT_SECONDS: Record<string, number> = {
  ns: 1e-9,
  us: 1e-6,
  'µs': 1e-6,
  'μs': 1e-6,
  ms: 1e-3,
  s: 1,
  m: 60,
  h: 3600,
  // Not in Go's time.ParseDuration; accepted because `1d` is what people type for "a day". It clamps to 24h.
  d: 86_400,
};

/**
 * Go-style duration (`90s`, `15m`, `1h30m`, `1.5h`, `24h`, plus `d`) to seconds; null when unparseable.
 * Like Go: a unit on every term, an optional leading sign, and a lone `0` is zero.
 */
export function parseDurationSeconds(raw: string): number | null {
  let text = raw.trim().toLowerCase();
  if (text === '') return null;
  let sign = 1;
  if (text[0] === '-' || text[0] === '+') {
    if (text[0] === '-') sign = -1;
    text = text.slice(1);
  }
  if (text === '0') return 0;
  if (text === '') return null;
  // A fresh sticky regex per call: its lastIndex is state that must not outlive the call.
  const term = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h|d)/y;
  let total = 0;
  while (term.lastIndex < text.length) {
    const match = term.exec(text);
    if (!match) return null;
    const unit = UNIT_SECONDS[match[2]!];
    if (unit === undefined) return null;
    total += Number(match[1]) * unit;
  }
  return Number.isFinite(total) ? sign * total : null;
}

/** The window length in whole seconds: default 1h, clamped to 5m..24h, unparseable falls back to 1h. */
export function parseWindow(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_WINDOW_SECONDS;
  const seconds = parseDurationSeconds(raw);
  if (seconds === null) return DEFAULT_WINDOW_SECONDS;
  return Math.round(Math.min(MAX_WINDOW_SECONDS, Math.max(MIN_WINDOW_SECONDS, seconds)));
}

/** The window actually used, ending now. */
export function resolveWindow(nowUnix: number, raw: string | undefined): ReconciliationWindow {
  const windowEndUnix = Math.floor(nowUnix);
  return { windowStartUnix: windowEndUnix - parseWindow(raw), windowEndUnix };
}
