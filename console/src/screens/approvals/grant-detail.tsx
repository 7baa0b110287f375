/** One grant: project scope, approvers, expiry, and the revoke control for admins. */
import { useState } from 'react';
import { enc } from '../../api';
import { ErrorNote, IdList, Loading, Notice, StateBadge, Time } from '../../components/ui';
import { formatUsd, REQUEST_TYPE_LABEL } from '../../format';
import { Link } from '../../router';
import type { Grant } from '../../types';
import { useResource } from '../../use-resource';
import { RevokeButton } from './granted';

export function GrantDetail({ id }: { id: string }) {
  const grant = useResource<Grant>(`/api/v1/policy-exceptions/${enc(id)}`);
  const [revoked, setRevoked] = useState(false);
  const g = grant.data;
  return (
    <section>
      <p>
        <Link to="/approvals/granted">← Granted</Link>
      </p>
      <h1>Grant</h1>
      {revoked ? <Notice kind="success">The grant was revoked.</Notice> : null}
      <ErrorNote message={grant.error} />
      {!g ? (
        grant.loading ? <Loading what="the grant" /> : null
      ) : (
        <>
          <dl className="detail">
            <dt>Type</dt>
            <dd>{REQUEST_TYPE_LABEL[g.type]}</dd>
            <dt>State</dt>
            <dd>
              <StateBadge state={g.state} />
            </dd>
            <dt>Developer</dt>
            <dd>{g.developerId}</dd>
            {g.policyName ? (
              <>
                <dt>Policy</dt>
                <dd>
                  <code>{g.policyName}</code>
                </dd>
              </>
            ) : null}
            {g.model ? (
              <>
                <dt>Model</dt>
                <dd>
                  <code>{g.model}</code>
                </dd>
              </>
            ) : null}
            {g.amountUsd !== null ? (
              <>
                <dt>Amount</dt>
                <dd>{formatUsd(g.amountUsd)}</dd>
              </>
            ) : null}
            <dt>Project scope</dt>
            <dd>{g.projectScope ? <code>{g.projectScope}</code> : <span className="muted">everywhere</span>}</dd>
            <dt>Approvers</dt>
            <dd>
              <IdList ids={g.approvers} />
            </dd>
            <dt>Granted</dt>
            <dd>
              <Time iso={g.createdAt} />
            </dd>
            <dt>Expires</dt>
            <dd>
              <Time iso={g.expiresAt} />
            </dd>
            {g.revokedAt ? (
              <>
                <dt>Revoked</dt>
                <dd>
                  <Time iso={g.revokedAt} /> {g.revokedBy ? `by ${g.revokedBy}` : ''}
                </dd>
              </>
            ) : null}
            <dt>Request</dt>
            <dd>
              <Link to={`/approvals/requests/${encodeURIComponent(g.requestId)}`}>{g.requestId}</Link>
            </dd>
          </dl>
          <RevokeButton
            grant={g}
            onRevoked={() => {
              setRevoked(true);
              grant.reload();
            }}
          />
        </>
      )}
    </section>
  );
}
