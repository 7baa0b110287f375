/**
 * Every 4xx/5xx of the control plane answers `{"error": {"code", "message"}}`. Framework errors (bad
 * JSON, wrong content type, oversize body, schema validation) become 4xx naming the field; only a real
 * fault is a 500, and its details go to the log, not to the caller.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, errorBody, statusOf } from './errors.js';

interface ValidationIssue {
  keyword?: string;
  instancePath?: string;
  message?: string;
  params?: Record<string, unknown>;
}

const PART: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

/** A sentence naming the offending field, from the first meaningful schema error. */
export function describeValidation(issues: readonly ValidationIssue[], context: string | undefined): string {
  const part = PART[context ?? ''] ?? context ?? 'request';
  const meaningful = issues.filter((i) => i.keyword !== 'boolean');
  // An unknown field or a missing one says more than the anyOf/const noise that may precede it.
  const first =
    meaningful.find((i) => i.keyword === 'additionalProperties' || i.keyword === 'required') ??
    meaningful.find((i) => i.keyword !== 'anyOf') ??
    meaningful[0] ??
    issues[0];
  if (!first) return `${part}: invalid`;
  const path = (first.instancePath ?? '')
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  const field = [part, ...path].join('.');
  const params = first.params ?? {};
  if (first.keyword === 'additionalProperties') {
    const extra = (params.additionalProperties as string[] | undefined)?.[0] ?? (params.additionalProperty as string | undefined);
    return `${field}: unknown field "${extra ?? '?'}"`;
  }
  if (first.keyword === 'required') {
    const missing = (params.requiredProperties as string[] | undefined)?.[0] ?? (params.missingProperty as string | undefined);
    return `${field}${missing ? `.${missing}` : ''}: is required`;
  }
  if (first.keyword === 'anyOf' || first.keyword === 'const' || first.keyword === 'enum') {
    const allowed = meaningful.filter((i) => i.instancePath === first.instancePath && i.keyword === 'const').map((i) => JSON.stringify(i.params?.allowedValue));
    if (allowed.length > 0) return `${field}: must be one of ${allowed.join(', ')}`;
  }
  return `${field}: ${first.message ?? 'invalid'}`;
}

export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError & { validation?: ValidationIssue[]; validationContext?: string }, request: FastifyRequest, reply: FastifyReply) => {
    if (err instanceof AppError) {
      return reply.status(statusOf(err.code)).send(errorBody(err.code, err.message, err.details));
    }
    if (err.validation) {
      return reply.status(400).send(errorBody('invalid_request', describeValidation(err.validation, err.validationContext)));
    }
    switch (err.code) {
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return reply.status(415).send(errorBody('unsupported_media_type', `Content-Type ${request.headers['content-type'] ?? '(none)'} is not accepted here; send application/json`));
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return reply.status(413).send(errorBody('payload_too_large', 'the request body is larger than this server accepts'));
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return reply.status(400).send(errorBody('malformed_json', `the body is not valid JSON: ${err.message}`));
    }
    if (err instanceof SyntaxError) {
      return reply.status(400).send(errorBody('malformed_json', `the body is not valid JSON: ${err.message}`));
    }
    const status = err.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.status(status).send(errorBody('invalid_request', err.message));
    }
    request.log.error({ err }, 'unhandled error');
    return reply.status(500).send(errorBody('internal_error', 'an internal error occurred; it has been logged'));
  });
  app.setNotFoundHandler((request, reply) => {
    reply.status(404).send(errorBody('not_found', `no route ${request.method} ${request.url.split('?')[0]}`));
  });
}
