/**
 * What the signed-in person may do with a request: admins approve and deny (never their own request's
 * approval), named co-signers cast their own vote whatever their role, viewers see Approve and Deny
 * disabled with the reason. The server decides in the end; its refusal is shown as it words it.
 */
import { useState, type ReactElement } from 'react';
import { enc, post } from '../../api';
import { ReasonDialog } from '../../components/dialogs';
import { ActionButton } from '../../components/ui';
import { subjectOf } from '../../format';
import { useMe, VIEWER_CANNOT } from '../../session';
import type { AccessRequest, DecisionOutcome } from '../../types';
import { ApproveDialog } from './approve-dialog';
import type { OutcomeReport } from './outcome';

type Open = null | 'approve' | 'deny' | 'vote-approve' | 'vote-deny';

export function pendingCoSigners(request: AccessRequest): string[] {
  const voted = new Set(request.decisions.map((d) => d.approver));
  return request.requiredApprovers.filter((a) => !voted.has(a));
}

export function RequestActions({ request, onOutcome }: { request: AccessRequest; onOutcome: (report: OutcomeReport) => void }) {
  const me = useMe();
  const [open, setOpen] = useState<Open>(null);
  const admin = me.role === 'admin';
  const viewer = me.role === 'viewer';
  const own = request.requester === me.id;
  const myVoteOpen = request.state === 'under_review' && pendingCoSigners(request).includes(me.id);
  const what = `${subjectOf(request)} for ${request.requester}`;

  const decided = (verb: string) => (answer: DecisionOutcome) => {
    const state = answer.request.state === 'under_review' ? 'Under Review: waiting for the co-signers' : answer.request.state;
    onOutcome({ message: `${verb} the request (${what}). It is now ${state}.`, warnings: answer.warnings });
  };

  const buttons: ReactElement[] = [];
  if (request.state === 'pending' && (admin || viewer)) {
    buttons.push(
      <ActionButton
        key="approve"
        kind="primary"
        onClick={() => setOpen('approve')}
        disabledReason={viewer ? VIEWER_CANNOT : own ? 'You cannot approve your own request: another admin must decide it.' : null}
      >
        Approve
      </ActionButton>,
    );
  }
  if (myVoteOpen) {
    buttons.push(
      <ActionButton key="vote-approve" kind="primary" onClick={() => setOpen('vote-approve')} disabledReason={own ? 'You cannot co-sign your own request.' : null}>
        Approve (your vote)
      </ActionButton>,
      <ActionButton key="vote-deny" kind="danger" onClick={() => setOpen('vote-deny')}>
        Deny (your vote)
      </ActionButton>,
    );
  }
  if ((request.state === 'pending' || (request.state === 'under_review' && !myVoteOpen)) && (admin || viewer)) {
    buttons.push(
      <ActionButton key="deny" kind="danger" onClick={() => setOpen('deny')} disabledReason={viewer ? VIEWER_CANNOT : null}>
        Deny
      </ActionButton>,
    );
  }

  return (
    <div className="actions">
      {buttons}
      {open === 'approve' ? <ApproveDialog request={request} onDone={decided('Approved')} onClose={() => setOpen(null)} /> : null}
      {open === 'deny' ? (
        <ReasonDialog
          title={`Deny ${what}`}
          label="Reason"
          required
          danger
          submitLabel="Deny"
          onClose={() => setOpen(null)}
          onSubmit={async (reason) => decided('Denied')(await post<DecisionOutcome>(`/api/v1/access-requests/${enc(request.id)}/deny`, { reason }))}
        >
          <p className="muted">The reason is relayed to the developer verbatim. They may submit a new request.</p>
        </ReasonDialog>
      ) : null}
      {open === 'vote-approve' ? (
        <ReasonDialog
          title={`Co-sign ${what}`}
          label="Note"
          required={false}
          submitLabel="Record my approval"
          onClose={() => setOpen(null)}
          onSubmit={async (reason) =>
            decided('You approved')(
              await post<DecisionOutcome>(`/api/v1/access-requests/${enc(request.id)}/votes`, { decision: 'approve', ...(reason.trim() ? { reason } : {}) }),
            )
          }
        >
          <p className="muted">Your vote is recorded for you ({me.id}) only. The request is approved when the last co-signer approves.</p>
        </ReasonDialog>
      ) : null}
      {open === 'vote-deny' ? (
        <ReasonDialog
          title={`Deny ${what} as a co-signer`}
          label="Reason"
          required
          danger
          submitLabel="Record my denial"
          onClose={() => setOpen(null)}
          onSubmit={async (reason) => decided('You denied')(await post<DecisionOutcome>(`/api/v1/access-requests/${enc(request.id)}/votes`, { decision: 'deny', reason }))}
        >
          <p className="muted">A denial by any co-signer denies the request at once and revokes its active grant. The reason is relayed to the developer.</p>
        </ReasonDialog>
      ) : null}
    </div>
  );
}
