/**
 * The audit log, newest first, with filters and "Load more" over the server's cursor. A governed call that was
 * allowed shows as two rows, its decision and its end (`…_end`), joined by `data.callId`: "Call" filters on it. A
 * decision whose end was never written (in flight, or its replica stopped) says its outcome is unknown.
 */
import { useEffect, useState, type FormEvent } from 'react';
import { get, messageOf, query } from '../api';
import { ErrorNote, Time } from '../components/ui';
import type { AuditEvent } from '../types';

interface Filters {
  type: string;
  action: string;
  identity: string;
  callId: string;
  since: string;
  until: string;
}

const EMPTY: Filters = { type: '', action: '', identity: '', callId: '', since: '', until: '' };

/** The outcome cell: a decision still waiting for its end event says the call's outcome is not known. */
function OutcomeCell({ event }: { event: AuditEvent }) {
  if (event.callEnded === false) {
    return <span title="No end event: the call is in flight, or the replica serving it stopped before it ended">{event.outcome}, outcome unknown</span>;
  }
  return <>{event.outcome}</>;
}

/** datetime-local values are local time; the server takes ISO 8601. */
const iso = (local: string) => (local ? new Date(local).toISOString() : '');

export function AuditLog() {
  const [draft, setDraft] = useState<Filters>(EMPTY);
  const [filters, setFilters] = useState<Filters>(EMPTY);
  const [items, setItems] = useState<AuditEvent[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);

  const load = async (f: Filters, after: string | null) => {
    setLoading(true);
    setError(null);
    try {
      const page = await get<{ items: AuditEvent[]; nextCursor: string | null }>(
        `/api/v1/audit-events${query({ type: f.type, action: f.action.trim(), identity: f.identity.trim(), callId: f.callId.trim(), since: iso(f.since), until: iso(f.until), limit: 50, cursor: after })}`,
      );
      setItems((prev) => (after ? [...prev, ...page.items] : page.items));
      setCursor(page.nextCursor);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setLoading(false);
    }
  };

  useEffect(() => {
    void load(filters, null);
  }, [filters]);

  const apply = (e: FormEvent) => {
    e.preventDefault();
    setFilters(draft);
  };
  const set = (k: keyof Filters) => (e: { target: { value: string } }) => setDraft({ ...draft, [k]: e.target.value });

  return (
    <section>
      <h1>Audit log</h1>
      <form className="filters" onSubmit={apply}>
        <label className="field inline">
          <span>Type</span>
          <select value={draft.type} onChange={set('type')}>
            <option value="">any</option>
            <option value="control">control</option>
            <option value="llm">llm</option>
            <option value="mcp">mcp</option>
            <option value="egress">egress</option>
          </select>
        </label>
        <label className="field inline">
          <span>Action</span>
          <input type="search" placeholder="access_request.approve" value={draft.action} onChange={set('action')} />
        </label>
        <label className="field inline">
          <span>Identity</span>
          <input type="search" placeholder="eng/alice" value={draft.identity} onChange={set('identity')} />
        </label>
        <label className="field inline">
          <span>Call</span>
          <input type="search" placeholder="call id" value={draft.callId} onChange={set('callId')} />
        </label>
        <label className="field inline">
          <span>Since</span>
          <input type="datetime-local" value={draft.since} onChange={set('since')} />
        </label>
        <label className="field inline">
          <span>Until</span>
          <input type="datetime-local" value={draft.until} onChange={set('until')} />
        </label>
        <button type="submit" className="btn primary">
          Apply
        </button>
        <button
          type="button"
          className="btn plain"
          onClick={() => {
            setDraft(EMPTY);
            setFilters(EMPTY);
          }}
        >
          Clear
        </button>
      </form>
      <ErrorNote message={error} />
      {items.length === 0 && !loading ? <p className="empty">No audit events match.</p> : null}
      {items.length > 0 ? (
        <table className="table audit">
          <thead>
            <tr>
              <th>At</th>
              <th>Type</th>
              <th>Action</th>
              <th>Outcome</th>
              <th>Actor</th>
              <th>Subject</th>
              <th>Host</th>
              <th>Data</th>
            </tr>
          </thead>
          <tbody>
            {items.map((e) => (
              <tr key={e.id} className={e.outcome !== 'ok' ? 'outcome-refused' : ''}>
                <td>
                  <Time iso={e.at} />
                </td>
                <td>{e.type}</td>
                <td>
                  <code>{e.action}</code>
                </td>
                <td>
                  <OutcomeCell event={e} />
                  {typeof e.data.callId === 'string' ? (
                    <button
                      type="button"
                      className="btn plain"
                      title="This call's decision and end events"
                      onClick={() => {
                        const next = { ...EMPTY, callId: e.data.callId as string };
                        setDraft(next);
                        setFilters(next);
                      }}
                    >
                      call
                    </button>
                  ) : null}
                </td>
                <td>{e.actor.id ? `${e.actor.id}` : e.actor.kind}</td>
                <td>{e.subject ?? ''}</td>
                <td>{e.host ?? ''}</td>
                <td>
                  {Object.keys(e.data).length > 0 ? (
                    <details>
                      <summary>data</summary>
                      <pre className="user-text">{JSON.stringify(e.data, null, 2)}</pre>
                    </details>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {cursor ? (
        <button type="button" className="btn plain" disabled={loading} onClick={() => void load(filters, cursor)}>
          Load more
        </button>
      ) : null}
      {loading ? <p className="muted">Loading…</p> : null}
    </section>
  );
}
