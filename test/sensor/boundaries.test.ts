/**
 * The sensor is a separate program: src/sensor/ imports nothing of the server but the ingest wire types, and those
 * type-only (erased at build), so the server's folders can move without touching it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';

const DIR = new URL('../../src/sensor/', import.meta.url);

test('src/sensor imports only itself, packages, node: modules, and runtime-guard/types.ts type-only', () => {
  const offending: string[] = [];
  for (const file of readdirSync(DIR).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(new URL(file, DIR), 'utf8');
    for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'"]*?from\s+'([^']+)'/gm)) {
      const [statement, , typeOnly, from] = m as unknown as [string, string, string | undefined, string];
      if (!from.startsWith('.')) continue;
      if (from.startsWith('./') && !from.slice(2).includes('/')) continue;
      if (from === '../runtime-guard/types.js' && typeOnly) continue;
      offending.push(`${file}: ${statement.trim()}`);
    }
  }
  assert.deepEqual(offending, []);
});
