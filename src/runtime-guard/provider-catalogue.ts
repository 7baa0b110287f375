/**
 * The versioned catalogue of hostnames the reconciliation recognises: AI provider endpoints (counted when
 * reached outside governance), package registries (kind `infra`, suppressed `package-registry`) and
 * service-mesh / telemetry control planes (suppressed `sidecar-control-plane`).
 *
 * No curated public list of AI provider hosts exists, so this one is ours: bump CATALOGUE_VERSION on every
 * change so a report can say which catalogue judged it.
 *
 * Patterns are matched as suffixes on label boundaries, case-insensitively, trailing dot tolerated: the
 * pattern `api.openai.com` matches `api.openai.com` and `eu.api.openai.com`, never `notapi.openai.com`
 * nor `api.openai.com.attacker.io`. A label may hold `*` (any run of characters, at least one label
 * character overall): `*-aiplatform.googleapis.com`, `bedrock-runtime.*.amazonaws.com`.
 * Patterns ending in `.svc` name in-cluster Services (`<svc>.<namespace>.svc`); they also match the
 * fully qualified `<svc>.<namespace>.svc.<cluster domain>`.
 */
import type { FindingKind, SuppressReason } from './types.js';

export const CATALOGUE_VERSION = '2026-11.2';

export type CatalogueCategory = 'ai-provider' | 'package-registry' | 'control-plane';

export interface CatalogueEntry {
  pattern: string;
  /** Who runs it, for people reading a report. */
  label: string;
  category: CatalogueCategory;
}

export interface CatalogueMatch {
  entry: CatalogueEntry;
  kind: FindingKind;
  /** '' for AI providers, which are never suppressed by the catalogue. */
  suppressReason: SuppressReason | '';
  /** True for in-cluster Service patterns (`….svc`). */
  inCluster: boolean;
}

const AI_PROVIDERS: ReadonlyArray<readonly [string, string]> = [
  ['api.openai.com', 'OpenAI'],
  // Codex signed in with a ChatGPT account talks to chatgpt.com rather than api.openai.com.
  ['chatgpt.com', 'OpenAI'],
  ['api.anthropic.com', 'Anthropic'],
  ['generativelanguage.googleapis.com', 'Google Gemini API'],
  ['aiplatform.googleapis.com', 'Google Vertex AI'],
  ['*-aiplatform.googleapis.com', 'Google Vertex AI'],
  ['cloudcode-pa.googleapis.com', 'Google Gemini Code Assist'],
  ['bedrock-runtime.*.amazonaws.com', 'Amazon Bedrock'],
  ['bedrock-runtime-fips.*.amazonaws.com', 'Amazon Bedrock'],
  ['bedrock.*.amazonaws.com', 'Amazon Bedrock'],
  ['bedrock-agent-runtime.*.amazonaws.com', 'Amazon Bedrock'],
  // Every Azure OpenAI resource is <resource>.openai.azure.com (Azure Government: .us, Azure in China: .cn).
  ['openai.azure.com', 'Azure OpenAI'],
  ['openai.azure.us', 'Azure OpenAI'],
  ['openai.azure.cn', 'Azure OpenAI'],
  ['cognitiveservices.azure.com', 'Azure AI services'],
  ['services.ai.azure.com', 'Azure AI Foundry'],
  ['models.ai.azure.com', 'Azure AI Foundry'],
  ['api.mistral.ai', 'Mistral AI'],
  ['codestral.mistral.ai', 'Mistral AI'],
  ['api.cohere.com', 'Cohere'],
  ['api.cohere.ai', 'Cohere'],
  ['api.groq.com', 'Groq'],
  ['api.together.xyz', 'Together AI'],
  ['api.together.ai', 'Together AI'],
  ['api.deepseek.com', 'DeepSeek'],
  ['api.x.ai', 'xAI'],
  ['api.perplexity.ai', 'Perplexity'],
  ['api.fireworks.ai', 'Fireworks AI'],
  ['openrouter.ai', 'OpenRouter'],
  ['router.huggingface.co', 'Hugging Face'],
  ['api-inference.huggingface.co', 'Hugging Face'],
  ['api.deepinfra.com', 'DeepInfra'],
  ['api.sambanova.ai', 'SambaNova'],
  ['api.cerebras.ai', 'Cerebras'],
  ['integrate.api.nvidia.com', 'NVIDIA NIM'],
  ['api.moonshot.ai', 'Moonshot AI'],
  ['gateway.ai.cloudflare.com', 'Cloudflare AI Gateway'],
  ['ai-gateway.vercel.sh', 'Vercel AI Gateway'],
  ['api.ai21.com', 'AI21 Labs'],
  ['api.replicate.com', 'Replicate'],
  ['api.voyageai.com', 'Voyage AI'],
  ['api.jina.ai', 'Jina AI'],
  ['models.github.ai', 'GitHub Models'],
  ['githubcopilot.com', 'GitHub Copilot'],
  ['dashscope.aliyuncs.com', 'Alibaba Model Studio'],
  ['dashscope-intl.aliyuncs.com', 'Alibaba Model Studio'],
];

const PACKAGE_REGISTRIES: ReadonlyArray<readonly [string, string]> = [
  ['registry.npmjs.org', 'npm'],
  ['registry.yarnpkg.com', 'Yarn'],
  ['pypi.org', 'PyPI'],
  ['files.pythonhosted.org', 'PyPI'],
  ['proxy.golang.org', 'Go module proxy'],
  ['sum.golang.org', 'Go checksum database'],
  ['crates.io', 'crates.io'],
  ['repo.maven.apache.org', 'Maven Central'],
  ['repo1.maven.org', 'Maven Central'],
  ['rubygems.org', 'RubyGems'],
  ['api.nuget.org', 'NuGet'],
  ['repo.packagist.org', 'Packagist'],
  ['repo.hex.pm', 'Hex'],
  ['repo.anaconda.com', 'Anaconda'],
  ['conda.anaconda.org', 'Anaconda'],
  ['deb.debian.org', 'Debian'],
  ['security.debian.org', 'Debian'],
  ['archive.ubuntu.com', 'Ubuntu'],
  ['security.ubuntu.com', 'Ubuntu'],
  ['ports.ubuntu.com', 'Ubuntu'],
  ['dl-cdn.alpinelinux.org', 'Alpine'],
  ['dl.fedoraproject.org', 'Fedora'],
  ['mirrors.fedoraproject.org', 'Fedora'],
  ['docker.io', 'Docker Hub'],
  ['production.cloudflare.docker.com', 'Docker Hub'],
  ['ghcr.io', 'GitHub Container Registry'],
  ['pkg-containers.githubusercontent.com', 'GitHub Container Registry'],
  ['quay.io', 'Quay'],
  ['registry.k8s.io', 'Kubernetes registry'],
  ['gcr.io', 'Google Container Registry'],
  ['pkg.dev', 'Google Artifact Registry'],
  ['*.dkr.ecr.*.amazonaws.com', 'Amazon ECR'],
  ['public.ecr.aws', 'Amazon ECR Public'],
  ['mcr.microsoft.com', 'Microsoft Container Registry'],
  ['registry.access.redhat.com', 'Red Hat'],
  ['registry.redhat.io', 'Red Hat'],
  ['registry.terraform.io', 'Terraform Registry'],
  ['releases.hashicorp.com', 'HashiCorp releases'],
];

const CONTROL_PLANES: ReadonlyArray<readonly [string, string]> = [
  // In-cluster mesh and telemetry Services.
  ['istiod*.istio-system.svc', 'Istio'],
  ['linkerd-*.linkerd.svc', 'Linkerd'],
  ['consul*.consul.svc', 'Consul'],
  ['kuma-control-plane.kuma-system.svc', 'Kuma'],
  ['*otel-collector*.*.svc', 'OpenTelemetry Collector'],
  ['*opentelemetry-collector*.*.svc', 'OpenTelemetry Collector'],
  ['datadog*.*.svc', 'Datadog agent'],
  ['jaeger-collector*.*.svc', 'Jaeger'],
  // Telemetry intakes that agents and sidecars ship to.
  ['datadoghq.com', 'Datadog intake'],
  ['datadoghq.eu', 'Datadog intake'],
  ['ddog-gov.com', 'Datadog intake'],
  ['nr-data.net', 'New Relic intake'],
  ['collector.newrelic.com', 'New Relic intake'],
  ['api.honeycomb.io', 'Honeycomb intake'],
  ['api.eu1.honeycomb.io', 'Honeycomb intake'],
  ['live.dynatrace.com', 'Dynatrace intake'],
  ['ingest.lightstep.com', 'Lightstep intake'],
  ['grafana.net', 'Grafana Cloud intake'],
];

export const CATALOGUE: readonly CatalogueEntry[] = [
  ...AI_PROVIDERS.map(([pattern, label]) => ({ pattern, label, category: 'ai-provider' as const })),
  ...PACKAGE_REGISTRIES.map(([pattern, label]) => ({ pattern, label, category: 'package-registry' as const })),
  ...CONTROL_PLANES.map(([pattern, label]) => ({ pattern, label, category: 'control-plane' as const })),
];

type LabelMatcher = string | RegExp;

interface CompiledEntry {
  /** Pattern labels, last label first. */
  labels: LabelMatcher[];
  match: CatalogueMatch;
}

function compileLabel(label: string): LabelMatcher {
  if (!label.includes('*')) return label;
  const body = label
    .split('*')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^.]*');
  return new RegExp(`^${body}$`);
}

function compileEntry(entry: CatalogueEntry): CompiledEntry {
  const labels = entry.pattern.toLowerCase().split('.').reverse().map(compileLabel);
  const inCluster = entry.pattern.endsWith('.svc');
  const match: CatalogueMatch =
    entry.category === 'ai-provider'
      ? { entry, kind: 'provider', suppressReason: '', inCluster }
      : entry.category === 'package-registry'
        ? { entry, kind: 'infra', suppressReason: 'package-registry', inCluster }
        : // A mesh control plane inside the cluster is cluster infrastructure; a SaaS intake is a third-party dependency.
          { entry, kind: inCluster ? 'internal' : 'infra', suppressReason: 'sidecar-control-plane', inCluster };
  return { labels, match };
}

/** Compiled once: immutable, derived from the constant lists above. Keyed by the pattern's last label. */
const BY_LAST_LABEL: ReadonlyMap<string, readonly CompiledEntry[]> = (() => {
  const index = new Map<string, CompiledEntry[]>();
  for (const entry of CATALOGUE) {
    const compiled = compileEntry(entry);
    const last = compiled.labels[0];
    if (typeof last !== 'string') throw new Error(`catalogue pattern must end in a literal label: ${entry.pattern}`);
    const list = index.get(last) ?? [];
    list.push(compiled);
    index.set(last, list);
  }
  return index;
})();

/** Lower case, trimmed, trailing dots removed. */
export function normalizeHostname(raw: string): string {
  let host = raw.trim().toLowerCase();
  while (host.endsWith('.')) host = host.slice(0, -1);
  return host;
}

function labelMatches(matcher: LabelMatcher, label: string): boolean {
  return typeof matcher === 'string' ? matcher === label : matcher.test(label);
}

/**
 * The catalogue entry a hostname falls under, the most specific (longest pattern) when several do.
 * `clusterDomain` lets `<svc>.<ns>.svc.<clusterDomain>` match the `<svc>.<ns>.svc` patterns.
 */
export function matchCatalogue(rawHost: string, clusterDomain = 'cluster.local'): CatalogueMatch | undefined {
  let host = normalizeHostname(rawHost);
  const clusterSuffix = `.svc.${clusterDomain}`;
  if (host.endsWith(clusterSuffix)) host = host.slice(0, -clusterDomain.length - 1);
  const labels = host.split('.').reverse();
  if (labels.some((label) => label === '')) return undefined;
  const candidates = BY_LAST_LABEL.get(labels[0] ?? '');
  if (!candidates) return undefined;
  let best: CompiledEntry | undefined;
  for (const candidate of candidates) {
    if (candidate.labels.length > labels.length) continue;
    if (best && candidate.labels.length <= best.labels.length) continue;
    let ok = true;
    for (let i = 0; i < candidate.labels.length; i++) {
      if (!labelMatches(candidate.labels[i]!, labels[i]!)) {
        ok = false;
        break;
      }
    }
    if (ok) best = candidate;
  }
  return best?.match;
}
