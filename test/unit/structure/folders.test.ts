/**
 * The folders of src/ follow the dependencies (README, "Layout"): the import graph between folders has no cycle,
 * shared/ imports no other folder, only the composition root (app/) and the entry points import app/, the
 * forwarding planes never import the governance, and every folder imports only what the Layout allows it.
 * Files have no import cycle either.
 *
 * Every import counts: static `import … from` and `import '…'`, `export … from`, and `import('…')` with a string
 * literal, type-only imports (`import type`, `export type … from`) included: a type import ties two folders as
 * much as a value import does (changing the type changes both). The imports are read with TypeScript's own
 * pre-processor, so an import in a comment or a string does not count.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../../src');

/**
 * What each folder may import (besides itself), as README's Layout draws it. The top-level entry points
 * (main.ts, cli.ts, cli-main.ts, version.ts) are not listed: they may import anything but are imported by none
 * of the folders except app/ (the version).
 */
const ALLOWED: Record<string, readonly string[]> = {
  shared: [],
  config: ['shared'],
  store: ['config', 'shared'],
  audit: ['store', 'shared'],
  identity: ['audit', 'store', 'shared'],
  policy: ['identity', 'audit', 'store', 'shared'],
  budgets: ['identity', 'audit', 'store', 'config', 'shared'],
  'held-calls': ['identity', 'audit', 'store', 'config', 'shared'],
  approvals: ['budgets', 'held-calls', 'identity', 'audit', 'store', 'shared'],
  'runtime-guard': ['config', 'audit', 'store', 'shared'],
  // The node sensor is a program of its own: it shares only the ingest wire types (type-only).
  sensor: ['runtime-guard'],
  'planes/llm': ['config', 'shared'],
  'planes/mcp': ['config', 'shared'],
  'planes/egress': ['config', 'shared'],
  'planes/reins-mcp': ['config', 'shared'],
  governance: [
    'planes/llm',
    'planes/mcp',
    'planes/egress',
    'planes/reins-mcp',
    'policy',
    'budgets',
    'held-calls',
    'approvals',
    'identity',
    'audit',
    'store',
    'config',
    'shared',
  ],
  app: ['*'],
};

const ENTRY_POINTS = new Set(['main.ts', 'cli.ts', 'cli-main.ts', 'version.ts']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** src/<folder>; each plane (planes/<name>) and each top-level file is a node of its own. */
function folderOf(file: string): string {
  const parts = relative(SRC, file).split(sep);
  if (parts.length === 1) return parts[0]!;
  if (parts[0] === 'planes' && parts.length > 2) return `planes/${parts[1]}`;
  return parts[0]!;
}

/** The src/ files a file imports (relative specifiers; `./x.js` is the source `./x.ts`). */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => resolve(dirname(file), spec.replace(/\.js$/, '.ts')));
}

const files = sourceFiles(SRC);
const fileEdges = new Map(files.map((f) => [f, importsOf(f)]));

const folderEdges = new Map<string, Map<string, string>>();
for (const [file, targets] of fileEdges) {
  const from = folderOf(file);
  for (const target of targets) {
    const to = folderOf(target);
    if (to === from) continue;
    const edges = folderEdges.get(from) ?? new Map<string, string>();
    // One example import per folder pair, for the failure message.
    if (!edges.has(to)) edges.set(to, `${relative(SRC, file)} -> ${relative(SRC, target)}`);
    folderEdges.set(from, edges);
  }
}

/** A cycle of the graph as a path that returns to its start, or null. */
function findCycle(nodes: Iterable<string>, next: (node: string) => Iterable<string>): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (node: string): string[] | null => {
    state.set(node, 'open');
    path.push(node);
    for (const n of next(node)) {
      if (state.get(n) === 'open') return [...path.slice(path.indexOf(n)), n];
      if (state.get(n) === undefined) {
        const found = visit(n);
        if (found) return found;
      }
    }
    path.pop();
    state.set(node, 'done');
    return null;
  };
  for (const node of nodes) {
    if (state.get(node) !== undefined) continue;
    const found = visit(node);
    if (found) return found;
  }
  return null;
}

function describeCycle(cycle: string[]): string {
  return cycle
    .slice(0, -1)
    .map((from, i) => `  ${from} -> ${cycle[i + 1]}   (${folderEdges.get(from)?.get(cycle[i + 1]!) ?? ''})`)
    .join('\n');
}

describe('src/ layout', () => {
  test('the imports were read (the check is not vacuous)', () => {
    assert.ok(files.length > 100, `only ${files.length} files under ${SRC}`);
    assert.ok(folderEdges.get('app')?.has('governance'), 'app/ imports governance/');
  });

  test('no import cycle between folders', () => {
    const cycle = findCycle(folderEdges.keys(), (f) => folderEdges.get(f)?.keys() ?? []);
    assert.equal(cycle, null, cycle ? `folders import each other in a cycle:\n${describeCycle(cycle)}` : '');
  });

  test('no import cycle between files', () => {
    const cycle = findCycle(fileEdges.keys(), (f) => fileEdges.get(f) ?? []);
    assert.equal(cycle, null, cycle ? `files import each other in a cycle:\n  ${cycle.map((f) => relative(SRC, f)).join('\n  -> ')}` : '');
  });

  test('shared/ imports no other folder of src', () => {
    assert.deepEqual([...(folderEdges.get('shared')?.values() ?? [])], []);
  });

  test('only app/ and the entry points import app/', () => {
    const importers = [...folderEdges].filter(([from, to]) => to.has('app') && !ENTRY_POINTS.has(from)).map(([from, to]) => to.get('app'));
    assert.deepEqual(importers, []);
  });

  test('the planes forward only: they never import the governance (it implements the hooks they define)', () => {
    const importers = [...folderEdges].filter(([from, to]) => from.startsWith('planes/') && to.has('governance')).map(([from, to]) => to.get('governance'));
    assert.deepEqual(importers, []);
  });

  test('every folder imports only what the Layout allows it', () => {
    const unexpected: string[] = [];
    for (const [from, edges] of folderEdges) {
      if (ENTRY_POINTS.has(from)) continue;
      const allowed = ALLOWED[from];
      if (allowed === undefined) {
        unexpected.push(`${from} is a folder the Layout does not know: add it to README's Layout and to ALLOWED here`);
        continue;
      }
      if (allowed.includes('*')) continue;
      for (const [to, example] of edges) {
        if (!allowed.includes(to) && !(to === 'version.ts' && from === 'app')) unexpected.push(`${from} may not import ${to}: ${example}`);
      }
    }
    assert.deepEqual(unexpected, []);
  });
});
