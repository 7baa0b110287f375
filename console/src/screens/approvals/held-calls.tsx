/**
 * Held calls: requester, tool or model, parking policy, policy message and, for an LLM request, the
 * prompt excerpt (credentials were redacted before storage). Release resumes the calls silently to the
 * developer; Deny stops them and the developer's tool shows the note verbatim.
 */
import { useState } from 'react';
import { enc, post } from '../../api';
import { ConfirmDialog, ReasonDialog } from '../../components/dialogs';
import { ActionButton, Time } from '../../components/ui';
import { useMe, VIEWER_CANNOT } from '../../session';
import type { HeldCall } from '../../types';
import type { OutcomeReport } from './outcome';

export function HeldCalls({ items, onOutcome }: { items: HeldCall[]; onOutcome: (r: OutcomeReport) => void }) {
  if (items.length === 0) return <p className="empty">No held calls are waiting.</p>;
  return (
    <table className="table held-calls">
      <thead>
        <tr>
          <th>Held since</th>
          <th>Requester</th>
          <th>Tool or model</th>
          <th>Parking policy</th>
          <th>Policy message</th>
          <th>Prompt excerpt</th>
          <th>Calls</th>
          <th>Window ends</th>
          <th>Actions</th>
        </tr>
      </thead>
      <tbody>
        {items.map((h) => (
          <HeldCallRow key={h.id} call={h} onOutcome={onOutcome} />
        ))}
      </tbody>
    </table>
  );
}

function HeldCallRow({ call, onOutcome }: { call: HeldCall; onOutcome: (r: OutcomeReport) => void }) {
  const me = useMe();
  const [open, setOpen] = useState<null | 'release' | 'deny'>(null);
  const what = call.kind === 'llm' ? `model ${call.model ?? '?'}` : `tool ${call.tool ?? '?'}`;
  const calls = call.attachedCalls === 1 ? '1 call' : `${call.attachedCalls} calls`;
  const cannot = me.role !== 'admin' ? VIEWER_CANNOT : call.requester === me.id ? 'You cannot release your own held call.' : null;
  return (
    <tr data-held-call={call.id}>
      <td>
        <Time iso={call.createdAt} />
      </td>
      <td>
        {call.requester ? <div>{call.requester}</div> : <div className="muted">agent key (no session)</div>}
        <div className="muted">agent {call.agentId || '(the tool itself)'}</div>
        {call.sessionId ? <div className="muted">session {call.sessionId}</div> : null}
      </td>
      <td>
        <span className="badge">{call.kind === 'llm' ? 'LLM' : 'MCP'}</span> {call.kind === 'llm' ? call.model : call.tool}
      </td>
      <td>
        <code>{call.policyName}</code>
      </td>
      <td>
        <p className="user-text">{call.policyMessage}</p>
      </td>
      <td>{call.promptExcerpt ? <pre className="user-text excerpt">{call.promptExcerpt}</pre> : <span className="muted">—</span>}</td>
      <td>{call.attachedCalls}</td>
      <td>
        <Time iso={call.expiresAt} />
      </td>
      <td>
        <div className="actions">
          <ActionButton kind="primary" onClick={() => setOpen('release')} disabledReason={cannot}>
            Release
          </ActionButton>
          <ActionButton kind="danger" onClick={() => setOpen('deny')} disabledReason={me.role !== 'admin' ? VIEWER_CANNOT : null}>
            Deny
          </ActionButton>
        </div>
        {open === 'release' ? (
          <ConfirmDialog
            title={`Release the held ${what}?`}
            confirmLabel="Release"
            onClose={() => setOpen(null)}
            onConfirm={async () => {
              const done = await post<HeldCall>(`/api/v1/held-calls/${enc(call.id)}/approve`, {});
              onOutcome({ message: `Released ${done.attachedCalls === 1 ? '1 call' : `${done.attachedCalls} calls`} to ${what} (policy ${call.policyName}).` });
            }}
          >
            <p>
              The {calls} resume and complete as if the policy had allowed them. Nothing is announced to the developer; the release is recorded in
              the audit log.
            </p>
          </ConfirmDialog>
        ) : null}
        {open === 'deny' ? (
          <ReasonDialog
            title={`Deny the held ${what}`}
            label="Note"
            required
            danger
            submitLabel="Deny"
            onClose={() => setOpen(null)}
            onSubmit={async (note) => {
              await post<HeldCall>(`/api/v1/held-calls/${enc(call.id)}/deny`, { note });
              onOutcome({ message: `Denied ${calls} to ${what} (policy ${call.policyName}).` });
            }}
          >
            <p className="muted">The developer’s tool shows the policy, its message and your note verbatim.</p>
          </ReasonDialog>
        ) : null}
      </td>
    </tr>
  );
}
