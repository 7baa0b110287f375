/**
 * SigV4 for a Bedrock upstream configured without `apiKey`: Reins signs each forwarded request with IAM
 * credentials from the standard AWS credential chain (environment, shared config and credentials files, SSO,
 * web identity (EKS IRSA / Pod Identity), ECS and EC2 instance metadata), the way the AWS SDK itself would.
 * The signer and the chain are loaded on first use, so a deployment without Bedrock never loads them.
 */
import { createHash, createHmac } from 'node:crypto';

/** SHA-256 (or its HMAC, given a secret) over node:crypto, in the shape the signer asks for. */
class Sha256 {
  private hash;
  constructor(private readonly secret?: string | Uint8Array) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', secret);
  }
  update(data: string | Uint8Array): void {
    this.hash.update(data);
  }
  digest(): Promise<Uint8Array> {
    return Promise.resolve(new Uint8Array(this.hash.digest()));
  }
  reset(): void {
    this.hash = this.secret === undefined ? createHash('sha256') : createHmac('sha256', this.secret);
  }
}

interface Signer {
  sign(request: unknown): Promise<{ headers: Record<string, string> }>;
}

/** One signer per region, sharing one credential chain (it caches and refreshes what it resolved). */
export class BedrockSigning {
  private readonly signers = new Map<string, Promise<Signer>>();
  private credentials: Promise<() => Promise<unknown>> | null = null;

  /**
   * The headers to send: `headers` (all of which are signed, `host` included) plus `x-amz-date`,
   * `x-amz-content-sha256`, `authorization` and, with temporary credentials, `x-amz-security-token`.
   */
  async sign(region: string, baseUrl: string, method: string, route: string, headers: Record<string, string>, body: Buffer | undefined): Promise<Record<string, string>> {
    const signer = await this.signer(region);
    const url = new URL(route, baseUrl);
    const query: Record<string, string | string[]> = {};
    for (const [k, v] of url.searchParams) {
      const had = query[k];
      query[k] = had === undefined ? v : Array.isArray(had) ? [...had, v] : [had, v];
    }
    const signed = await signer.sign({
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port === '' ? undefined : Number(url.port),
      // As sent (a model id's `:` as %3A): the signer encodes it once more, as SigV4 wants for every service but S3.
      path: route.split('?')[0],
      query,
      headers: { ...headers, host: url.host, 'x-amz-content-sha256': createHash('sha256').update(body ?? Buffer.alloc(0)).digest('hex') },
      body: body ?? '',
    });
    return signed.headers;
  }

  private signer(region: string): Promise<Signer> {
    let signer = this.signers.get(region);
    if (!signer) {
      signer = this.load(region);
      this.signers.set(region, signer);
    }
    return signer;
  }

  private async load(region: string): Promise<Signer> {
    this.credentials ??= import('@aws-sdk/credential-provider-node').then((m) => m.defaultProvider() as () => Promise<unknown>);
    const [{ SignatureV4 }, credentials] = await Promise.all([import('@smithy/signature-v4'), this.credentials]);
    return new SignatureV4({ service: 'bedrock', region, sha256: Sha256 as never, credentials: credentials as never, uriEscapePath: true }) as unknown as Signer;
  }
}
