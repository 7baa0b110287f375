/**
 * One request with its decisions. Viewers read it (their deciding controls disabled); a developer reads
 * their own requests and the ones they are asked to co-sign, and casts their vote here.
 */
import { useState } from 'react';
import { enc } from '../../api';
import { ErrorNote, IdList, Loading, StateBadge, Time } from '../../components/ui';
import { formatDuration, formatUsd, REQUEST_TYPE_LABEL } from '../../format';
import { Link } from '../../router';
import type { AccessRequest } from '../../types';
import { useResource } from '../../use-resource';
import { Outcome, type OutcomeReport } from './outcome';
import { pendingCoSigners, RequestActions } from './request-actions';

export function RequestDetail({ id }: { id: string }) {
  const request = useResource<AccessRequest>(`/api/v1/access-requests/${enc(id)}`);
  const [outcome, setOutcome] = useState<OutcomeReport | null>(null);
  const r = request.data;
  return (
    <section>
      <p>
        <Link to="/approvals/pending">← Approvals</Link>
      </p>
      <h1>Request</h1>
      <Outcome report={outcome} onDismiss={() => setOutcome(null)} />
      <ErrorNote message={request.error} />
      {!r ? (
        request.loading ? <Loading what="the request" /> : null
      ) : (
        <>
          <dl className="detail">
            <dt>Type</dt>
            <dd>{REQUEST_TYPE_LABEL[r.type]}</dd>
            <dt>State</dt>
            <dd>
              <StateBadge state={r.state} />
            </dd>
            <dt>Requester</dt>
            <dd>{r.requester}</dd>
            <dt>Submitted</dt>
            <dd>
              <Time iso={r.createdAt} />
            </dd>
            {r.targetPolicy ? (
              <>
                <dt>Target policy</dt>
                <dd>
                  <code>{r.targetPolicy}</code>
                </dd>
              </>
            ) : null}
            {r.requestedModel ? (
              <>
                <dt>Requested model</dt>
                <dd>
                  <code>{r.requestedModel}</code>
                </dd>
              </>
            ) : null}
            {r.requestedAmountUsd !== null ? (
              <>
                <dt>Requested amount</dt>
                <dd>{formatUsd(r.requestedAmountUsd)}</dd>
              </>
            ) : null}
            {r.durationSeconds ? (
              <>
                <dt>Requested duration</dt>
                <dd>{formatDuration(r.durationSeconds)}</dd>
              </>
            ) : null}
            <dt>Project scope</dt>
            <dd>{r.projectScope ? <code>{r.projectScope}</code> : <span className="muted">everywhere</span>}</dd>
            <dt>Justification</dt>
            <dd>
              <p className="user-text justification">{r.justification}</p>
            </dd>
            <dt>Required approvers</dt>
            <dd>
              <IdList ids={r.requiredApprovers} />
              {r.state === 'under_review' ? (
                <div className="muted">
                  waiting for: <IdList ids={pendingCoSigners(r)} empty="nobody" />
                </div>
              ) : null}
            </dd>
            {r.grantId ? (
              <>
                <dt>Grant</dt>
                <dd>
                  <Link to={`/approvals/grants/${encodeURIComponent(r.grantId)}`}>{r.grantId}</Link>
                </dd>
              </>
            ) : null}
            {r.denialReason ? (
              <>
                <dt>Denial reason</dt>
                <dd>
                  <p className="user-text">{r.denialReason}</p>
                </dd>
              </>
            ) : null}
          </dl>
          <h2>Decisions</h2>
          {r.decisions.length === 0 ? (
            <p className="empty">No decisions yet.</p>
          ) : (
            <table className="table decisions">
              <thead>
                <tr>
                  <th>Approver</th>
                  <th>Decision</th>
                  <th>Reason</th>
                  <th>At</th>
                </tr>
              </thead>
              <tbody>
                {r.decisions.map((d) => (
                  <tr key={`${d.approver}-${d.at}`}>
                    <td>{d.approver}</td>
                    <td>
                      <StateBadge state={d.decision === 'approve' ? 'approved' : 'denied'} />
                    </td>
                    <td>{d.reason ? <p className="user-text">{d.reason}</p> : <span className="muted">—</span>}</td>
                    <td>
                      <Time iso={d.at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <RequestActions
            request={r}
            onOutcome={(report) => {
              setOutcome(report);
              request.reload();
            }}
          />
        </>
      )}
    </section>
  );
}
