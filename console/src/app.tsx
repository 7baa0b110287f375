/**
 * The shell: who is signed in (GET /api/v1/auth/me), the sign-in page when nobody is, and the sidebar
 * and screens by role. Developers see their own approvals and notifications only; admins and viewers
 * see every screen, viewers with the deciding controls disabled.
 */
import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { ApiError, get, messageOf, post, SESSION_ENDED_EVENT, setCsrfToken } from './api';
import { Link, matchPath, navigate, useLocation } from './router';
import { isReader, SessionContext } from './session';
import type { Me } from './types';
import { ErrorNote, Loading } from './components/ui';
import { SignIn } from './screens/sign-in';
import { Identities } from './screens/identities';
import { Approvals, APPROVAL_TABS, type ApprovalTab } from './screens/approvals/approvals';
import { RequestDetail } from './screens/approvals/request-detail';
import { GrantDetail } from './screens/approvals/grant-detail';
import { RuntimeGuard } from './screens/runtime/runtime-guard';
import { WorkloadObservations } from './screens/runtime/workload';
import { AuditLog } from './screens/audit-log';
import { Notifications } from './screens/notifications';
import { HumanReviewSettings } from './screens/settings';
import { Policies } from './screens/policies';
import { AccessTokens } from './screens/access-tokens';

type Phase = { kind: 'loading' } | { kind: 'signed-out'; notice?: string } | { kind: 'signed-in'; me: Me } | { kind: 'failed'; message: string };

export function App() {
  const [phase, setPhase] = useState<Phase>({ kind: 'loading' });

  const loadMe = useCallback(async () => {
    try {
      const me = await get<Me>('/api/v1/auth/me');
      setCsrfToken(me.csrfToken ?? null);
      setPhase({ kind: 'signed-in', me });
    } catch (err) {
      setCsrfToken(null);
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) setPhase({ kind: 'signed-out' });
      else setPhase({ kind: 'failed', message: messageOf(err) });
    }
  }, []);

  useEffect(() => {
    void loadMe();
    const ended = () => {
      setCsrfToken(null);
      setPhase({ kind: 'signed-out', notice: 'Your session has ended. Sign in again.' });
    };
    window.addEventListener(SESSION_ENDED_EVENT, ended);
    return () => window.removeEventListener(SESSION_ENDED_EVENT, ended);
  }, [loadMe]);

  const signOut = async () => {
    let providerLogoutUrl: string | undefined;
    try {
      ({ providerLogoutUrl } = await post<{ providerLogoutUrl?: string }>('/auth/logout'));
    } finally {
      setCsrfToken(null);
      setPhase({ kind: 'signed-out', notice: 'Signed out.' });
      navigate('/', { replace: true });
    }
    // A session from the identity provider: end the provider's session too (RP-initiated logout).
    if (providerLogoutUrl) window.location.assign(providerLogoutUrl);
  };

  switch (phase.kind) {
    case 'loading':
      return <Loading what="the console" />;
    case 'failed':
      return (
        <main className="centered">
          <ErrorNote message={phase.message} />
          <button type="button" className="btn" onClick={() => void loadMe()}>
            Try again
          </button>
        </main>
      );
    case 'signed-out':
      return <SignIn notice={phase.notice} onSignedIn={loadMe} />;
    case 'signed-in':
      return (
        <SessionContext.Provider value={phase.me}>
          <Shell me={phase.me} onSignOut={signOut} />
        </SessionContext.Provider>
      );
  }
}

interface NavItem {
  to: string;
  label: string;
  /** Paths under this one count as this item. */
  prefix: string;
  readersOnly?: boolean;
}

const NAV: { heading: string; items: NavItem[] }[] = [
  { heading: 'Agents', items: [{ to: '/identities', label: 'Identities', prefix: '/identities', readersOnly: true }] },
  {
    heading: 'Security',
    items: [
      { to: '/approvals/pending', label: 'Approvals', prefix: '/approvals' },
      { to: '/policies', label: 'Policies', prefix: '/policies', readersOnly: true },
      { to: '/audit', label: 'Audit log', prefix: '/audit', readersOnly: true },
    ],
  },
  { heading: 'Runtime guard', items: [{ to: '/runtime', label: 'Status and reconciliation', prefix: '/runtime', readersOnly: true }] },
  {
    heading: 'Account',
    items: [
      { to: '/notifications', label: 'Notifications', prefix: '/notifications' },
      { to: '/access-tokens', label: 'Access tokens', prefix: '/access-tokens' },
      { to: '/settings/general/human-review', label: 'Settings', prefix: '/settings', readersOnly: true },
    ],
  },
];

function Shell({ me, onSignOut }: { me: Me; onSignOut: () => void }) {
  const { path } = useLocation();
  const reader = isReader(me.role);
  const home = reader ? '/identities' : '/approvals/pending';
  useEffect(() => {
    if (path === '/' || path === '/sign-in') navigate(home, { replace: true });
  }, [path, home]);

  return (
    <div className="shell">
      <nav className="sidebar" aria-label="Main">
        <div className="brand">Reins</div>
        {NAV.map((group) => {
          const items = group.items.filter((i) => reader || !i.readersOnly);
          if (items.length === 0) return null;
          return (
            <div key={group.heading} className="nav-group">
              <div className="nav-heading">{group.heading}</div>
              {items.map((i) => {
                const current = path === i.prefix || path.startsWith(`${i.prefix}/`);
                return (
                  <Link key={i.to} to={i.to} className={current ? 'nav-link current' : 'nav-link'} {...(current ? { 'aria-current': 'page' as const } : {})}>
                    {i.label}
                  </Link>
                );
              })}
            </div>
          );
        })}
      </nav>
      <div className="main-column">
        <header className="topbar">
          <span className="whoami" data-testid="whoami">
            Signed in as <strong>{me.id}</strong> <span className={`badge role-${me.role}`}>{me.role}</span>
          </span>
          <button type="button" className="btn plain" onClick={onSignOut}>
            Sign out
          </button>
        </header>
        <main className="content">
          <Screen path={path} reader={reader} />
        </main>
      </div>
    </div>
  );
}

function Screen({ path, reader }: { path: string; reader: boolean }): ReactNode {
  const readersOnly = (node: ReactNode) => (reader ? node : <ErrorNote message="This screen needs the admin or viewer role." />);
  let m: Record<string, string> | null;
  if (path === '/' || path === '/sign-in') return null;
  if (path === '/identities') return readersOnly(<Identities />);
  if (path === '/approvals') return <Approvals tab="pending" />;
  if ((m = matchPath('/approvals/requests/:id', path))) return <RequestDetail id={m.id!} />;
  if ((m = matchPath('/approvals/grants/:id', path))) return <GrantDetail id={m.id!} />;
  if ((m = matchPath('/approvals/:tab', path)) && APPROVAL_TABS.some((t) => t.key === m!.tab)) return <Approvals tab={m.tab as ApprovalTab} />;
  if (path === '/policies') return readersOnly(<Policies />);
  if (path === '/audit') return readersOnly(<AuditLog />);
  if (path === '/runtime') return readersOnly(<RuntimeGuard />);
  if ((m = matchPath('/runtime/workloads/:key', path))) return readersOnly(<WorkloadObservations workloadKey={m.key!} />);
  if (path === '/notifications') return <Notifications />;
  if (path === '/access-tokens') return <AccessTokens />;
  if (path === '/settings' || path.startsWith('/settings/')) return readersOnly(<HumanReviewSettings />);
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        There is no console page at <code>{path}</code>.
      </p>
    </section>
  );
}
