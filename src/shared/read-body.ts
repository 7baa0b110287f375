/**
 * Reads a data-plane request body whole, up to a limit: the LLM gateway and the MCP proxy need the whole body
 * before deciding (the model and the tool call are in it). A declared or actual size over the limit answers
 * `too_large` at once; a client that goes away mid-body answers `aborted`.
 */
import type { IncomingMessage } from 'node:http';

export type BodyRead = Buffer | 'too_large' | 'aborted';

export function readBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  return new Promise((resolve) => {
    if (Number(req.headers['content-length'] ?? 0) > limit) {
      req.resume();
      resolve('too_large');
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > limit) {
        over = true;
        resolve('too_large');
        return;
      }
      chunks.push(chunk);
    });
    req.once('end', () => {
      if (!over) resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    req.once('error', () => resolve('aborted'));
    req.once('close', () => {
      if (!req.complete) resolve('aborted');
    });
  });
}
