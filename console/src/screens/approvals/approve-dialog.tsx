/**
 * The approval dialog: expiry, additional approvers and, for a budget top-up, "also raise the
 * persisted budget rule", which needs a permanent limit in USD. The limit is the rule's new absolute
 * value, not an increment.
 */
import { useState, type FormEvent } from 'react';
import { enc, messageOf, post } from '../../api';
import { ErrorNote, Modal } from '../../components/ui';
import { formatDuration, formatUsd, parseIdList, subjectOf } from '../../format';
import { isReader, useMe } from '../../session';
import type { AccessRequest, DecisionOutcome, Identity } from '../../types';
import { useResource } from '../../use-resource';

const EXPIRY_CHOICES: { value: string; label: string }[] = [
  { value: '', label: 'Default (the request’s duration, else the rule’s maximum, else 24 h)' },
  { value: '3600', label: '1 hour' },
  { value: '28800', label: '8 hours' },
  { value: '86400', label: '24 hours' },
  { value: '604800', label: '7 days' },
  { value: '2592000', label: '30 days' },
  { value: 'date', label: 'Until a date and time…' },
];

export function ApproveDialog({ request, onDone, onClose }: { request: AccessRequest; onDone: (answer: DecisionOutcome) => void; onClose: () => void }) {
  const me = useMe();
  const developers = useResource<{ items: Identity[] }>(isReader(me.role) ? '/api/v1/identities?kind=developer' : null);
  const [expiry, setExpiry] = useState('');
  const [until, setUntil] = useState('');
  const [approvers, setApprovers] = useState('');
  const [raise, setRaise] = useState(false);
  const [limit, setLimit] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const topUp = request.type === 'budget_topup';

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(null);
    const body: Record<string, unknown> = {};
    if (expiry === 'date') {
      const at = new Date(until);
      if (!until || Number.isNaN(at.getTime())) return setError('Choose the date and time the grant ends.');
      body.expiresAt = at.toISOString();
    } else if (expiry) body.durationSeconds = Number(expiry);
    const extra = parseIdList(approvers);
    if (extra.length > 0) body.additionalApprovers = extra;
    if (topUp && raise) {
      const value = Number(limit);
      if (limit.trim() === '' || !Number.isFinite(value) || value < 0) {
        return setError('Enter the permanent limit in USD: the budget rule’s new absolute limit.');
      }
      body.raiseBudgetRule = true;
      body.permanentLimitUsd = value;
    }
    setBusy(true);
    try {
      const answer = await post<DecisionOutcome>(`/api/v1/access-requests/${enc(request.id)}/approve`, body);
      onDone(answer);
      onClose();
    } catch (err) {
      setError(messageOf(err));
      setBusy(false);
    }
  };

  return (
    <Modal title={`Approve ${subjectOf(request)} for ${request.requester}`} onClose={onClose}>
      <form onSubmit={submit} className="approve-form">
        <p className="muted">
          The grant is active as soon as you approve. With co-signers (from the request, the exception rule or added here) the request goes
          Under Review until they have voted; a denial by any of them revokes the grant at once.
        </p>
        <label className="field">
          <span>Expiry</span>
          <select name="expiry" value={expiry} onChange={(e) => setExpiry(e.target.value)}>
            {EXPIRY_CHOICES.map((c) => (
              <option key={c.value} value={c.value}>
                {c.label}
              </option>
            ))}
          </select>
        </label>
        {request.durationSeconds ? <p className="hint">Requested duration: {formatDuration(request.durationSeconds)}.</p> : null}
        {expiry === 'date' ? (
          <label className="field">
            <span>Grant ends at</span>
            <input type="datetime-local" name="expiresAt" value={until} onChange={(e) => setUntil(e.target.value)} required />
          </label>
        ) : null}
        <label className="field">
          <span>Additional approvers (identity ids, comma-separated)</span>
          <input
            type="text"
            name="additionalApprovers"
            list="approver-ids"
            placeholder="eng/alice, sec/bob"
            spellCheck={false}
            value={approvers}
            onChange={(e) => setApprovers(e.target.value)}
          />
          <datalist id="approver-ids">
            {(developers.data?.items ?? [])
              .filter((i) => i.id !== request.requester)
              .map((i) => (
                <option key={i.id} value={i.id} />
              ))}
          </datalist>
        </label>
        {request.requiredApprovers.length > 0 ? (
          <p className="hint">Already required: {request.requiredApprovers.join(', ')}.</p>
        ) : null}
        {topUp ? (
          <fieldset className="raise">
            <legend>Budget rule</legend>
            <p className="hint">Requested: {formatUsd(request.requestedAmountUsd)} on top of the current limit, as a temporary grant.</p>
            <label className="check">
              <input type="checkbox" name="raiseBudgetRule" checked={raise} onChange={(e) => setRaise(e.target.checked)} />
              <span>also raise the persisted budget rule</span>
            </label>
            {raise ? (
              <label className="field">
                <span>Permanent limit (USD, absolute: the rule’s new limit, not an increment)</span>
                <input
                  type="number"
                  name="permanentLimitUsd"
                  min="0"
                  step="0.01"
                  inputMode="decimal"
                  required
                  value={limit}
                  onChange={(e) => setLimit(e.target.value)}
                />
              </label>
            ) : null}
            {raise ? (
              <p className="hint">The rule changes now and stays changed even if a co-signer later denies the request; a denial revokes only the temporary grant.</p>
            ) : null}
          </fieldset>
        ) : null}
        <ErrorNote message={error} />
        <div className="dialog-actions">
          <button type="button" className="btn plain" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn primary" disabled={busy}>
            Approve
          </button>
        </div>
      </form>
    </Modal>
  );
}
