/**
 * What AWS does with a SigV4-signed request, written out from the specification (not with the signer Reins
 * uses), so a test proves the signature a real Bedrock would accept: the canonical request, the string to sign,
 * the derived key, the signature. Answers null when it verifies, else why not.
 */
import { createHash, createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export interface AwsKeys {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

const rfc3986 = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: string | Buffer, data: string) => createHmac('sha256', key).update(data).digest();

export function verifySigV4(method: string, url: string, headers: IncomingHttpHeaders, body: Buffer, keys: AwsKeys, region: string, service = 'bedrock'): string | null {
  const auth = headers.authorization;
  const m = typeof auth === 'string' ? /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth) : null;
  if (!m) return `no SigV4 Authorization header (got ${String(auth)})`;
  const [, keyId, day, scopeRegion, scopeService, signedHeaders, signature] = m as unknown as string[];
  if (keyId !== keys.accessKeyId) return `unknown access key ${keyId}`;
  if (scopeRegion !== region || scopeService !== service) return `scope ${scopeRegion}/${scopeService}, expected ${region}/${service}`;
  const amzDate = headers['x-amz-date'];
  if (typeof amzDate !== 'string' || !amzDate.startsWith(day!)) return 'x-amz-date missing or not the scope day';
  if (keys.sessionToken !== undefined && headers['x-amz-security-token'] !== keys.sessionToken) return 'x-amz-security-token missing';
  const payloadHash = sha256(body);
  if (headers['x-amz-content-sha256'] !== undefined && headers['x-amz-content-sha256'] !== payloadHash) return 'x-amz-content-sha256 is not the body hash';
  const names = signedHeaders!.split(';');
  for (const required of ['host', 'x-amz-date']) if (!names.includes(required)) return `${required} not signed`;
  const [rawPath, rawQuery = ''] = url.split('?') as [string, string?];
  const canonicalUri = rawPath.split('/').map(rfc3986).join('/');
  const canonicalQuery = rawQuery === '' ? '' : [...new URLSearchParams(rawQuery)].map(([k, v]) => `${rfc3986(k)}=${rfc3986(v)}`).sort().join('&');
  const canonicalHeaders = names.map((n) => `${n}:${String(headers[n] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonicalRequest = [method, canonicalUri, canonicalQuery, canonicalHeaders, signedHeaders, payloadHash].join('\n');
  const scope = `${day}/${region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256(canonicalRequest)].join('\n');
  const key = hmac(hmac(hmac(hmac(`AWS4${keys.secretAccessKey}`, day!), region), service), 'aws4_request');
  const expected = createHmac('sha256', key).update(stringToSign).digest('hex');
  return expected === signature ? null : 'the request signature does not match';
}
