/** The Reins version, from package.json (read once at start; dist/ and src/ both sit one level below it). */
import { readFileSync } from 'node:fs';

export const REINS_VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;
