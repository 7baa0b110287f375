#!/usr/bin/env node
// The `reins-sensor` node sensor: runs the built program (npm install builds it).
import { existsSync } from 'node:fs';

const built = new URL('../dist/sensor/main.js', import.meta.url);
if (!existsSync(built)) {
  process.stderr.write('reins-sensor: not built yet; run `npm install` (or `npm run build`) first\n');
  process.exit(1);
}
await import(built.href);
