/**
 * The signed-in person's own personal access tokens, for Claude Code, Codex and other tools: mint one
 * (named, with an expiry), see its secret once with the set-up lines, list them, revoke one. Always the
 * caller's own, admins included (the list asks for `identityId` = the signed-in id and kind personal):
 * minting and revoking other identities' credentials stays with the CLI and the API.
 */
import { useState, type FormEvent } from 'react';
import { del, enc, messageOf, post, query } from '../api';
import { ConfirmDialog } from '../components/dialogs';
import { ErrorNote, Loading, Notice, Time } from '../components/ui';
import { useMe } from '../session';
import type { TokenInfo } from '../types';
import { useResource } from '../use-resource';

type Minted = TokenInfo & { token: string };

const DAY_MS = 24 * 60 * 60 * 1000;
const EXPIRY_CHOICES = [
  { value: '7', label: '7 days' },
  { value: '30', label: '30 days' },
  { value: '90', label: '90 days' },
  { value: 'date', label: 'On a date…' },
  { value: 'never', label: 'No expiry' },
] as const;
type ExpiryChoice = (typeof EXPIRY_CHOICES)[number]['value'];

/** The `expiresAt` to send, or an error naming what is wrong (the server checks it again). */
function expiresAtOf(choice: ExpiryChoice, date: string): { expiresAt?: string } | { error: string } {
  if (choice === 'never') return {};
  if (choice === 'date') {
    if (!date) return { error: 'Pick the date the token expires.' };
    // The end of the chosen day, local time: "until 31 March" means through that day.
    const end = new Date(`${date}T23:59:59`);
    if (Number.isNaN(end.getTime())) return { error: 'The expiry date is not a valid date.' };
    if (end.getTime() <= Date.now()) return { error: 'The expiry date must be in the future.' };
    return { expiresAt: end.toISOString() };
  }
  return { expiresAt: new Date(Date.now() + Number(choice) * DAY_MS).toISOString() };
}

function stateOf(t: TokenInfo): 'revoked' | 'expired' | 'active' {
  if (t.revokedAt) return 'revoked';
  if (t.expiresAt && new Date(t.expiresAt).getTime() <= Date.now()) return 'expired';
  return 'active';
}

export function AccessTokens() {
  const me = useMe();
  const list = useResource<{ items: TokenInfo[] }>(`/api/v1/tokens${query({ identityId: me.id, kind: 'personal' })}`);
  const [minted, setMinted] = useState<Minted | null>(null);
  const [revoking, setRevoking] = useState<TokenInfo | null>(null);

  const items = [...(list.data?.items ?? [])].sort((a, b) => b.createdAt.localeCompare(a.createdAt));
  return (
    <section>
      <h1>Access tokens</h1>
      <p className="muted">
        Your personal access tokens, for Claude Code, Codex and other tools. Every call made with one is audited as yours. Each tool or machine gets
        its own token, so you can revoke one without the others.
      </p>
      <CreateToken
        onCreated={(m) => {
          setMinted(m);
          list.reload();
        }}
      />
      {minted ? <NewSecret minted={minted} onDone={() => setMinted(null)} /> : null}
      <h2>Your tokens</h2>
      <ErrorNote message={list.error} />
      {!list.data ? (
        list.loading ? <Loading what="your tokens" /> : null
      ) : items.length === 0 ? (
        <p className="empty">You have no personal access tokens.</p>
      ) : (
        <table className="table">
          <thead>
            <tr>
              <th>Name</th>
              <th>Prefix</th>
              <th>Created</th>
              <th>Expires</th>
              <th>Last used</th>
              <th>State</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {items.map((t) => {
              const state = stateOf(t);
              return (
                <tr key={t.id} data-token={t.id} data-token-name={t.name}>
                  <td className="user-text">{t.name}</td>
                  <td>
                    <code>{t.prefix}…</code>
                  </td>
                  <td>
                    <Time iso={t.createdAt} />
                  </td>
                  <td>{t.expiresAt ? <Time iso={t.expiresAt} /> : <span className="muted">no expiry</span>}</td>
                  <td>
                    <Time iso={t.lastUsedAt} />
                  </td>
                  <td>
                    {state === 'revoked' ? (
                      <span className="badge state-revoked">
                        revoked <Time iso={t.revokedAt} />
                      </span>
                    ) : (
                      <span className={`badge state-${state}`}>{state}</span>
                    )}
                  </td>
                  <td>
                    {state === 'revoked' ? null : (
                      <button type="button" className="btn danger small" onClick={() => setRevoking(t)} aria-label={`Revoke ${t.name}`}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {revoking ? (
        <ConfirmDialog
          title="Revoke this token?"
          confirmLabel="Revoke"
          danger
          onConfirm={async () => {
            await del(`/api/v1/tokens/${enc(revoking.id)}`);
            if (minted?.id === revoking.id) setMinted(null);
            list.reload();
          }}
          onClose={() => setRevoking(null)}
        >
          <p>
            <strong className="user-text">{revoking.name}</strong> (<code>{revoking.prefix}…</code>) stops working at once: every tool using it is
            refused, and console sessions signed in with it end. This cannot be undone.
          </p>
        </ConfirmDialog>
      ) : null}
    </section>
  );
}

function CreateToken({ onCreated }: { onCreated: (m: Minted) => void }) {
  const me = useMe();
  const [name, setName] = useState('');
  const [choice, setChoice] = useState<ExpiryChoice>('30');
  const [date, setDate] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (name.trim() === '') {
      setError('Name the token (for example the tool and machine: "claude-code laptop").');
      return;
    }
    const expiry = expiresAtOf(choice, date);
    if ('error' in expiry) {
      setError(expiry.error);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const minted = await post<Minted>('/api/v1/tokens', { identityId: me.id, name: name.trim(), ...expiry });
      setName('');
      onCreated(minted);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  const tomorrow = new Date(Date.now() + DAY_MS).toISOString().slice(0, 10);
  return (
    <form className="filters" onSubmit={submit} aria-label="Create a token">
      <label className="field inline">
        <span>Token name</span>
        <input value={name} maxLength={100} onChange={(e) => setName(e.target.value)} placeholder="claude-code laptop" />
      </label>
      <label className="field inline">
        <span>Expires</span>
        <select aria-label="Expires" value={choice} onChange={(e) => setChoice(e.target.value as ExpiryChoice)}>
          {EXPIRY_CHOICES.map((c) => (
            <option key={c.value} value={c.value}>
              {c.label}
            </option>
          ))}
        </select>
      </label>
      {choice === 'date' ? (
        <label className="field inline">
          <span>Expiry date</span>
          <input type="date" min={tomorrow} value={date} onChange={(e) => setDate(e.target.value)} />
        </label>
      ) : null}
      <button type="submit" className="btn primary" disabled={busy}>
        Create token
      </button>
      <ErrorNote message={error} />
    </form>
  );
}

/** The secret, once: it is not stored in the clear and no later call returns it. */
function NewSecret({ minted, onDone }: { minted: Minted; onDone: () => void }) {
  const [copied, setCopied] = useState<'yes' | 'failed' | null>(null);
  const origin = window.location.origin;
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(minted.token);
      setCopied('yes');
    } catch {
      setCopied('failed');
    }
  };
  return (
    <Notice kind="success">
      <div data-testid="new-token">
        <p>
          <strong>
            Token <span className="user-text">{minted.name}</span> created.
          </strong>{' '}
          Copy it now: this is the only time it is shown. If you lose it, revoke it and create another.
        </p>
        <p>
          <code data-testid="new-token-secret">{minted.token}</code>{' '}
          <button type="button" className="btn plain small" onClick={() => void copy()}>
            Copy
          </button>{' '}
          {copied === 'yes' ? <span className="muted">Copied.</span> : copied === 'failed' ? <span className="muted">Select the token and copy it.</span> : null}
        </p>
        <h3>Claude Code</h3>
        <pre>{`export ANTHROPIC_BASE_URL=${origin}/llm/anthropic\nexport ANTHROPIC_AUTH_TOKEN=${minted.token}\nclaude`}</pre>
        <h3>Codex CLI</h3>
        <pre>{`# ~/.codex/config.toml
model_provider = "reins"

[model_providers.reins]
name = "Reins"
base_url = "${origin}/llm/openai/v1"
env_key = "REINS_TOKEN"
wire_api = "responses"

# then, in the shell:
export REINS_TOKEN=${minted.token}
codex`}</pre>
        <button type="button" className="btn plain small" onClick={onDone}>
          I have copied it
        </button>
      </div>
    </Notice>
  );
}
