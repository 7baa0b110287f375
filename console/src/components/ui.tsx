/** Small building blocks shared by the screens. User text is always passed as children (text nodes). */
import { useEffect, useId, useRef, type ReactNode } from 'react';
import { formatTime, REQUEST_STATE_LABEL } from '../format';
import type { CapabilityState, Tier } from '../types';

export const TIER_LABEL: Record<Tier, string> = {
  T1: 'Human-directed',
  T2: 'Semi-autonomous',
  T3: 'Highly autonomous',
  T4: 'Fully autonomous',
};

/** The agent's tier as policies see it; an agent with no assignment shows the resolved T2, marked default. */
export function TierBadge({ tier, effective }: { tier: Tier | ''; effective?: Tier | undefined }) {
  const shown: Tier = tier || effective || 'T2';
  return (
    <span className={`badge tier tier-${shown}`} data-testid="tier-badge" title={tier ? `Assigned ${shown}` : 'No assignment: resolves to T2'}>
      {shown} {TIER_LABEL[shown]}
      {tier ? '' : ' (default)'}
    </span>
  );
}

export function StateBadge({ state }: { state: string }) {
  return <span className={`badge state-${state}`}>{REQUEST_STATE_LABEL[state] ?? state}</span>;
}

/**
 * A capability state. Only `available` is green: `unknown` means the evidence is not there, which is
 * neither clean nor absent, so it is amber and says so.
 */
export function CapabilityBadge({ state }: { state: CapabilityState | undefined }) {
  const s = state ?? 'unknown';
  return <span className={`badge capability-${s}`}>{s}</span>;
}

export function ErrorNote({ message }: { message: string | null | undefined }) {
  if (!message) return null;
  return (
    <p className="notice error" role="alert">
      {message}
    </p>
  );
}

export function Notice({ kind = 'info', children }: { kind?: 'info' | 'success' | 'warning'; children: ReactNode }) {
  return (
    <div className={`notice ${kind}`} role="status">
      {children}
    </div>
  );
}

export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span className="muted">never</span>;
  return (
    <time dateTime={iso} title={iso}>
      {formatTime(iso)}
    </time>
  );
}

export function Loading({ what }: { what: string }) {
  return <p className="muted">Loading {what}…</p>;
}

/** A button that may be disabled with a reason, shown as its title (viewers see why). */
export function ActionButton(props: {
  children: ReactNode;
  onClick: () => void;
  disabledReason?: string | null | undefined;
  kind?: 'primary' | 'danger' | 'plain';
  busy?: boolean;
}) {
  const disabled = Boolean(props.disabledReason) || props.busy;
  return (
    <button
      type="button"
      className={`btn ${props.kind ?? 'plain'}`}
      onClick={props.onClick}
      disabled={disabled}
      title={props.disabledReason ?? undefined}
    >
      {props.children}
    </button>
  );
}

/** A modal dialog on the native <dialog> element: focus is trapped and Escape closes it. */
export function Modal({ title, onClose, children }: { title: string; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className="modal"
      aria-labelledby={id}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      <h2 id={id}>{title}</h2>
      {children}
    </dialog>
  );
}

export function Tabs<K extends string>({ tabs, current, onSelect }: { tabs: { key: K; label: string }[]; current: K; onSelect: (k: K) => void }) {
  return (
    <div className="tabs" role="tablist">
      {tabs.map((t) => (
        <button
          key={t.key}
          type="button"
          role="tab"
          aria-selected={t.key === current}
          className={t.key === current ? 'tab active' : 'tab'}
          onClick={() => onSelect(t.key)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

/** Identity ids as a list of short code chips. */
export function IdList({ ids, empty = 'none' }: { ids: readonly string[]; empty?: string }) {
  if (ids.length === 0) return <span className="muted">{empty}</span>;
  return (
    <span className="id-list">
      {ids.map((id) => (
        <code key={id}>{id}</code>
      ))}
    </span>
  );
}
