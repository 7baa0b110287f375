/** Entry point of the built CLI (bin/reins.mjs) and of `tsx src/cli-main.ts`. */
import { main } from './cli.js';

process.exitCode = await main(process.argv.slice(2));
