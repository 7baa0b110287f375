/// <reference types="node" />
/**
 * Builds the admin console into dist/console, which the server serves at `/` (src/app/console.ts).
 * `npx vite --config console/vite.config.ts` serves it in development with the API proxied to a local
 * replica (REINS_URL, default http://127.0.0.1:8080), so the session cookie stays first-party.
 */
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));
const api = process.env.REINS_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  root,
  base: '/',
  plugins: [react()],
  // Nothing from the environment reaches the bundle.
  envPrefix: 'REINS_CONSOLE_',
  build: {
    outDir: fileURLToPath(new URL('../dist/console', import.meta.url)),
    emptyOutDir: true,
    // The page's Content-Security-Policy allows scripts from 'self' only: no inline polyfill script.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    sourcemap: false,
    target: 'es2022',
  },
  server: {
    proxy: { '/api': { target: api, changeOrigin: false } },
  },
});
