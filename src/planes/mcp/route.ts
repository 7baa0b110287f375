/** `/mcp/{server}` in the Fastify app: for the OpenAPI description and `app.inject`; sockets reach the proxy directly. */
import type { FastifyInstance } from 'fastify';
import type { Access } from '../../shared/access.js';
import type { McpGateway } from './proxy.js';

const ACCESS: Access = 'gateway';

export function registerMcpProxyRoute<C>(app: FastifyInstance, gateway: McpGateway<C>): void {
  void app.register(async (scope) => {
    scope.addHook('onClose', async () => gateway.close());
    // The proxy reads the body itself: leave the stream unread.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null, undefined));
    scope.route({
      method: ['GET', 'POST', 'DELETE'],
      url: '/mcp/:server',
      config: { access: ACCESS },
      schema: {
        tags: ['gateway'],
        summary: 'An upstream MCP server (mcpServers in the config) through Reins: streamable HTTP',
        description:
          'Authorization: Bearer <Reins token>. Every tools/call is decided before it reaches the upstream; a refusal is a ' +
          'tools/call result with isError: true naming the policy. Sessions (Mcp-Session-Id), SSE and DELETE pass through. ' +
          'Past http.failedAuthLimit bad tokens from one client address in the window: 429 with a JSON-RPC error and Retry-After. ' +
          'An Origin header that is present and not allowed (loopback origins and gateway.mcpAllowedOrigins are): 403 with a JSON-RPC error, first. ' +
          'A held tools/call without a progress token is answered after gateway.mcpHeldAnswerSeconds with an isError result: call again after approval.',
        security: [{ bearer: [] }],
      },
      handler: (request, reply) => {
        reply.hijack();
        gateway.handle(request.raw, reply.raw);
      },
    });
  });
}
