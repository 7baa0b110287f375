/**
 * A throw-away self-signed certificate for 127.0.0.1 and localhost (openssl, which Node itself cannot replace:
 * node:crypto makes keys but no X.509 certificates), for suites that serve Reins over TLS.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestCert {
  certFile: string;
  keyFile: string;
  /** The certificate itself: what a client trusts (`ca`) to reach the server. */
  ca: Buffer;
  remove(): void;
}

export function selfSignedCert(): TestCert {
  const dir = mkdtempSync(join(tmpdir(), 'reins-tls-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  // prettier-ignore
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyFile, '-out', certFile, '-days', '2', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost',
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  return { certFile, keyFile, ca: readFileSync(certFile), remove: () => rmSync(dir, { recursive: true, force: true }) };
}
