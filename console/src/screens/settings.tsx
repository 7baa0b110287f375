/** Settings › General › Human Review: the approval windows of held calls and what happens when one elapses. */
import { useEffect, useState, type FormEvent } from 'react';
import { messageOf, put } from '../api';
import { ErrorNote, Loading, Notice } from '../components/ui';
import { formatDuration } from '../format';
import { useMe, VIEWER_CANNOT } from '../session';
import type { HumanReviewSettings as HumanReview } from '../types';
import { useResource } from '../use-resource';

export function HumanReviewSettings() {
  const me = useMe();
  const current = useResource<HumanReview>('/api/v1/settings/human-review');
  const [form, setForm] = useState<HumanReview | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [saved, setSaved] = useState(false);
  useEffect(() => {
    if (current.data) setForm(current.data);
  }, [current.data]);
  const admin = me.role === 'admin';

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!form) return;
    setError(null);
    setSaved(false);
    try {
      setForm(await put<HumanReview>('/api/v1/settings/human-review', form));
      setSaved(true);
    } catch (err) {
      setError(messageOf(err));
    }
  };

  return (
    <section>
      <p className="breadcrumb">Settings › General</p>
      <h1>Human Review</h1>
      <p className="muted">
        How long a held call waits for a reviewer. A policy’s own approval window overrides these defaults. Token-count requests are never held.
      </p>
      <ErrorNote message={current.error} />
      {!form ? (
        current.loading ? <Loading what="the settings" /> : null
      ) : (
        <form className="card form-grid" onSubmit={submit}>
          <fieldset disabled={!admin} title={admin ? undefined : VIEWER_CANNOT}>
            <label className="field">
              <span>Approval window for LLM requests (seconds)</span>
              <input
                type="number"
                name="llmApprovalWindowSeconds"
                min="1"
                step="1"
                required
                value={form.llmApprovalWindowSeconds}
                onChange={(e) => setForm({ ...form, llmApprovalWindowSeconds: Number(e.target.value) })}
              />
              <small className="hint">{formatDuration(form.llmApprovalWindowSeconds)} (default 5 min)</small>
            </label>
            <label className="field">
              <span>Approval window for MCP tool calls (seconds)</span>
              <input
                type="number"
                name="mcpApprovalWindowSeconds"
                min="1"
                step="1"
                required
                value={form.mcpApprovalWindowSeconds}
                onChange={(e) => setForm({ ...form, mcpApprovalWindowSeconds: Number(e.target.value) })}
              />
              <small className="hint">{formatDuration(form.mcpApprovalWindowSeconds)} (default 30 min)</small>
            </label>
            <div className="field">
              <span>When no reviewer acts in time</span>
              <label className="check">
                <input type="radio" name="timeoutOutcome" value="deny" checked={form.timeoutOutcome === 'deny'} onChange={() => setForm({ ...form, timeoutOutcome: 'deny' })} />
                <span>Stop the call (deny)</span>
              </label>
              <label className="check">
                <input type="radio" name="timeoutOutcome" value="allow" checked={form.timeoutOutcome === 'allow'} onChange={() => setForm({ ...form, timeoutOutcome: 'allow' })} />
                <span>Let it through and audit it (allow)</span>
              </label>
              <small className="hint">Either way the developer is told that no reviewer acted in time.</small>
            </div>
            <ErrorNote message={error} />
            {saved ? <Notice kind="success">Saved. Every replica applies it to calls parked from now on.</Notice> : null}
            <div className="dialog-actions">
              <button type="submit" className="btn primary" title={admin ? undefined : VIEWER_CANNOT}>
                Save
              </button>
            </div>
          </fieldset>
        </form>
      )}
    </section>
  );
}
