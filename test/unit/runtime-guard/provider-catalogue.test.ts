import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { CATALOGUE, CATALOGUE_VERSION, matchCatalogue } from '../../../src/runtime-guard/provider-catalogue.js';

describe('provider catalogue', () => {
  test('is versioned', () => {
    assert.match(CATALOGUE_VERSION, /^\d{4}-\d{2}\.\d+$/);
  });

  const providers: Array<[string, string]> = [
    ['api.openai.com', 'OpenAI'],
    ['API.OpenAI.com.', 'OpenAI'],
    ['eu.api.openai.com', 'OpenAI'],
    ['api.anthropic.com', 'Anthropic'],
    ['generativelanguage.googleapis.com', 'Google Gemini API'],
    ['aiplatform.googleapis.com', 'Google Vertex AI'],
    ['us-central1-aiplatform.googleapis.com', 'Google Vertex AI'],
    ['europe-west4-aiplatform.googleapis.com', 'Google Vertex AI'],
    ['bedrock-runtime.us-east-1.amazonaws.com', 'Amazon Bedrock'],
    ['bedrock-runtime-fips.us-gov-west-1.amazonaws.com', 'Amazon Bedrock'],
    ['bedrock.eu-central-1.amazonaws.com', 'Amazon Bedrock'],
    ['my-resource.openai.azure.com', 'Azure OpenAI'],
    ['acme-eu.openai.azure.com', 'Azure OpenAI'],
    ['gov-resource.openai.azure.us', 'Azure OpenAI'],
    ['cn-resource.openai.azure.cn', 'Azure OpenAI'],
    ['my-resource.cognitiveservices.azure.com', 'Azure AI services'],
    ['proj.services.ai.azure.com', 'Azure AI Foundry'],
    ['api.mistral.ai', 'Mistral AI'],
    ['codestral.mistral.ai', 'Mistral AI'],
    ['api.cohere.com', 'Cohere'],
    ['api.cohere.ai', 'Cohere'],
    ['api.groq.com', 'Groq'],
    ['api.together.xyz', 'Together AI'],
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
  ];
  for (const [host, label] of providers) {
    test(`${host} is an AI provider (${label}), counted when unsuppressed`, () => {
      const match = matchCatalogue(host);
      assert.equal(match?.entry.label, label);
      assert.equal(match?.kind, 'provider');
      assert.equal(match?.suppressReason, '');
    });
  }

  const lookalikes = [
    'evilapi.openai.com.attacker.io',
    'notapi.openai.com',
    'api.openai.com.attacker.io',
    'openai.com',
    'api.openai.co',
    'api-openai.com',
    'xopenai.azure.com',
    'bedrock-runtime.amazonaws.com',
    'aiplatform.googleapis.com.evil.net',
    's3.us-east-1.amazonaws.com',
    'api..openai.com',
    '',
  ];
  for (const host of lookalikes) {
    test(`${JSON.stringify(host)} matches nothing: suffixes match on label boundaries only`, () => {
      assert.equal(matchCatalogue(host), undefined);
    });
  }

  const registries = ['registry.npmjs.org', 'pypi.org', 'files.pythonhosted.org', 'proxy.golang.org', 'index.crates.io', 'registry-1.docker.io', 'ghcr.io', 'us-docker.pkg.dev', '123456789012.dkr.ecr.eu-west-1.amazonaws.com'];
  for (const host of registries) {
    test(`${host} is a package registry: kind infra, suppressed package-registry`, () => {
      const match = matchCatalogue(host);
      assert.equal(match?.kind, 'infra');
      assert.equal(match?.suppressReason, 'package-registry');
    });
  }

  const controlPlanes: Array<[string, string]> = [
    ['istiod.istio-system.svc', 'internal'],
    ['istiod-1-22.istio-system.svc.cluster.local', 'internal'],
    ['linkerd-identity.linkerd.svc.cluster.local', 'internal'],
    ['linkerd-dst.linkerd.svc', 'internal'],
    ['otel-collector.observability.svc', 'internal'],
    ['datadog-agent.monitoring.svc.cluster.local', 'internal'],
    ['intake.datadoghq.com', 'infra'],
    ['otlp.nr-data.net', 'infra'],
  ];
  for (const [host, kind] of controlPlanes) {
    test(`${host} is a mesh or telemetry control plane (kind ${kind})`, () => {
      const match = matchCatalogue(host);
      assert.equal(match?.suppressReason, 'sidecar-control-plane');
      assert.equal(match?.kind, kind);
    });
  }

  test('in-cluster patterns follow a custom cluster domain', () => {
    assert.equal(matchCatalogue('istiod.istio-system.svc.corp.internal', 'corp.internal')?.suppressReason, 'sidecar-control-plane');
    assert.equal(matchCatalogue('istiod.istio-system.svc.corp.internal'), undefined);
  });

  test('every pattern is lower case and ends in a literal label', () => {
    for (const entry of CATALOGUE) {
      assert.equal(entry.pattern, entry.pattern.toLowerCase(), entry.pattern);
      assert.doesNotMatch(entry.pattern.split('.').pop() ?? '', /\*/, entry.pattern);
    }
  });
});
