/**
 * Sign-in: with the identity provider when the deployment has one (a link to /auth/oidc/login, which comes back
 * with the session cookie), and with a personal access token exchanged for the cookie (POST /api/v1/auth/session).
 */
import { useEffect, useState, type FormEvent } from 'react';
import { get, messageOf, post } from '../api';
import { ErrorNote, Notice } from '../components/ui';

export function SignIn({ notice, onSignedIn }: { notice?: string | undefined; onSignedIn: () => Promise<void> }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [provider, setProvider] = useState<{ displayName: string; loginUrl: string } | null>(null);
  const [tokenSignIn, setTokenSignIn] = useState<'all' | 'admins' | 'off'>('all');

  useEffect(() => {
    // What this deployment offers; without an answer the token form alone is shown.
    get<{ oidc: { displayName: string; loginUrl: string } | null; tokenSignIn?: 'all' | 'admins' | 'off' }>('/api/v1/auth/sign-in-options')
      .then((options) => {
        setProvider(options.oidc);
        setTokenSignIn(options.tokenSignIn ?? 'all');
      })
      .catch(() => setProvider(null));
  }, []);
  // Back to the screen the person was on (the server accepts console paths only).
  const returnTo = `${window.location.pathname}${window.location.search}`;

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
        {provider ? (
          <>
            <a className="btn primary" href={`${provider.loginUrl}?returnTo=${encodeURIComponent(returnTo)}`}>
              Sign in with {provider.displayName}
            </a>
            {tokenSignIn === 'off' ? null : <p className="muted">{tokenSignIn === 'admins' ? 'Or, admins only, for break-glass access:' : 'Or with a token:'}</p>}
          </>
        ) : null}
        {tokenSignIn === 'off' ? null : (
          <>
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
          </>
        )}
      </form>
    </main>
  );
}
