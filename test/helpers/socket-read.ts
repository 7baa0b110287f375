/** Raw-socket reads for tests that speak HTTP or CONNECT byte by byte (replicas killed or stopped mid-call). */
import type net from 'node:net';

/** Reads from a socket until `done` says the bytes so far are enough. */
export function readUntil(socket: net.Socket, done: (text: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (!done(text)) return;
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(text);
    };
    const onClose = () => reject(new Error(`socket closed after ${JSON.stringify(text)}`));
    socket.on('data', onData);
    socket.once('close', onClose);
  });
}
