#!/usr/bin/env node
// The `reins` CLI: runs the built program (npm install builds it).
import { existsSync } from 'node:fs';

const built = new URL('../dist/cli.js', import.meta.url);
if (!existsSync(built)) {
  process.stderr.write('reins: not built yet; run `npm install` (or `npm run build`) first\n');
  process.exit(1);
}
const { main } = await import(built.href);
process.exitCode = await main(process.argv.slice(2));
