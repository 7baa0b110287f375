/** Sign-in: a personal access token is exchanged for the session cookie (POST /api/v1/auth/session). */
import { useState, type FormEvent } from 'react';
import { messageOf, post } from '../api';
import { ErrorNote, Notice } from '../components/ui';

export function SignIn({ notice, onSignedIn }: { notice?: string | undefined; onSignedIn: () => Promise<void> }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await post('/api/v1/auth/session', { token: token.trim() });
      setToken('');
      await onSignedIn();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="centered">
      <form className="card sign-in" onSubmit={submit} aria-labelledby="sign-in-title">
        <h1 id="sign-in-title">Sign in to Reins</h1>
        {notice ? <Notice>{notice}</Notice> : null}
        <p className="muted">
          Use a personal access token (<code>reins_pat_…</code>). An admin mints one with <code>reins token create &lt;identity&gt;</code> or{' '}
          <code>POST /api/v1/tokens</code>.
        </p>
        <label className="field">
          <span>Personal access token</span>
          <input
            type="password"
            name="token"
            autoComplete="off"
            spellCheck={false}
            required
            value={token}
            onChange={(e) => setToken(e.target.value)}
          />
        </label>
        <ErrorNote message={error} />
        <button type="submit" className="btn primary" disabled={busy || token.trim() === ''}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
