/** `/mcp/reins` in the Fastify app: for the OpenAPI description and `app.inject`; sockets reach the server directly. */
import type { FastifyInstance } from 'fastify';
import type { Access } from '../../shared/access.js';
import type { ReinsMcpServer } from './server.js';

export const REINS_MCP_PATH = '/mcp/reins';
const ACCESS: Access = 'gateway';

export function registerReinsMcpRoute(app: FastifyInstance, server: ReinsMcpServer): void {
  app.route({
    method: ['GET', 'POST', 'DELETE'],
    url: REINS_MCP_PATH,
    config: { access: ACCESS },
    schema: {
      tags: ['gateway'],
      summary: 'The built-in Reins MCP server (streamable HTTP, stateless)',
      description:
        'Tools for developer tools: request_policy_exception, request_model_access, request_budget_topup, get_request_status. ' +
        'Authorization: Bearer <personal access token>; the requester is that token\'s developer. ' +
        'An Origin header that is present and not allowed (loopback origins and gateway.mcpAllowedOrigins are): 403 with a JSON-RPC error.',
      security: [{ bearer: [] }],
    },
    handler: (request, reply) => {
      reply.hijack();
      server.handle(request.raw, reply.raw, request.body);
    },
  });
}
