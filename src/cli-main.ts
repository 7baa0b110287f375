/** Entry point of the built CLI (bin/reins.mjs) and of `tsx src/cli-main.ts`. */
import { setFlagsFromString } from 'node:v8';

// One command per process: V8's optimizing compiler would recompile PGlite's WebAssembly on background threads
// for a speed the command never lasts long enough to use. The baseline compiler alone takes about a third less
// CPU time to open the embedded store (and to create one). Set before PGlite loads; this process runs nothing else.
setFlagsFromString('--liftoff-only');
const { main } = await import('./cli.js');

process.exitCode = await main(process.argv.slice(2));
