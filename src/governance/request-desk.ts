/** The built-in MCP server's access to the approval workflow: requests for the token's developer only. */
import type { AccessRequestDesk } from '../planes/reins-mcp/server.js';
import type { Db } from '../store/db.js';
import { getRequest, submitRequest, type AccessRequest } from '../approvals/access-requests.js';

function summary(r: AccessRequest): string {
  switch (r.state) {
    case 'pending':
      return 'Your request is waiting for an admin.';
    case 'under_review':
      return 'Your request is approved for now and active; co-signers are still reviewing it. Retry your call.';
    case 'approved':
      return 'Your request was approved. Retry your call.';
    case 'denied':
      return `Your request was denied: ${r.denialReason ?? ''}`;
  }
}

export function requestDesk(db: Db): AccessRequestDesk {
  return {
    async submit(developer, input) {
      const role = (await db.query<{ role: 'admin' | 'viewer' | 'developer' }>('SELECT role FROM identities WHERE id = $1', [developer.id])).rows[0]?.role ?? 'developer';
      const r = await submitRequest(db, { kind: 'developer', identityId: developer.id, role, via: 'token', tokenId: developer.tokenId }, input);
      return { id: r.id, state: r.state, message: 'Your request was sent to the Reins admins.' };
    },
    async status(developer, requestId) {
      const r = await getRequest(db, { kind: 'developer', identityId: developer.id, role: 'developer', via: 'token', tokenId: '' }, requestId);
      return { id: r.id, state: r.state, message: summary(r) };
    },
  };
}
