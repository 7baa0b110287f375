/**
 * A close for the fakes' servers that cannot hang: every socket is tracked from accept on (a TLS handshake
 * in progress, a keep-alive socket, a watch or a stream the client never ends, a request a test held back)
 * and destroyed on close. `server.close()` alone waits for all of them, so one request left open by a
 * failing test would keep the file from ever finishing.
 */
import type { Server } from 'node:net';
import type { Socket } from 'node:net';

export function closable(server: Server): () => Promise<void> {
  const sockets = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  return async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const socket of sockets) socket.destroy();
    await closed;
  };
}
