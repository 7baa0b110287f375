import assert from 'node:assert/strict';
import { test } from 'node:test';
import { finishOpenApiDocument, operationIdFor } from '../../../src/app/openapi.js';

test('operationIds from the method and path', () => {
  assert.equal(operationIdFor('post', '/api/v1/access-requests/{id}/approve'), 'postAccessRequestsByIdApprove');
  assert.equal(operationIdFor('get', '/api/v1/identities/detail'), 'getIdentitiesDetail');
  assert.equal(operationIdFor('put', '/api/v1/identities/autonomy-tier'), 'putIdentitiesAutonomyTier');
  assert.equal(operationIdFor('get', '/mcp/{server}'), 'getMcpByServer');
});

test('the finished document: unique operationIds (a route\'s own kept), a 4XX on every operation, no single-member anyOf, no unused components', () => {
  const shared = { responses: { 200: { description: 'ok' } } };
  const doc = finishOpenApiDocument({
    openapi: '3.1.0',
    paths: {
      '/mcp/{server}': { get: shared, post: shared },
      '/api/v1/things': { get: { operationId: 'listThings', responses: { 200: { description: 'ok', content: { 'application/json': { schema: { anyOf: [{ type: 'string' }], description: 'd' } } } }, 404: { description: 'x' } } } },
      '/api/v1/other': { get: { operationId: 'listThings', responses: { 200: { description: 'ok', content: { 'application/json': { schema: { $ref: '#/components/schemas/used' } } } } } } },
    },
    components: { schemas: { used: { type: 'string' }, unused: { type: 'number' } } },
  }) as any;
  assert.equal(doc.paths['/mcp/{server}'].get.operationId, 'getMcpByServer');
  assert.equal(doc.paths['/mcp/{server}'].post.operationId, 'postMcpByServer');
  assert.ok(doc.paths['/mcp/{server}'].get.responses['4XX']);
  assert.equal(doc.paths['/api/v1/things'].get.operationId, 'listThings');
  assert.equal(doc.paths['/api/v1/other'].get.operationId, 'listThingsGet');
  assert.equal(doc.paths['/api/v1/things'].get.responses['4XX'], undefined, 'a 404 is a 4XX answer already');
  assert.deepEqual(doc.paths['/api/v1/things'].get.responses[200].content['application/json'].schema, { type: 'string', description: 'd' });
  assert.deepEqual(Object.keys(doc.components.schemas), ['used']);
});
