/**
 * The runtime guard's honesty rules, in one place so every screen words them the same way:
 * unknown is not clean, a never-run probe or scrape is unknown, a scrape error makes the lag
 * untrustworthy, and a window where the network detector stood down is thinner, not cleaner.
 */
import { CapabilityBadge } from '../../components/ui';
import { formatUnix } from '../../format';
import type { CapabilityState, IngestLag } from '../../types';

export function Capability({ name, state, reason }: { name: string; state: CapabilityState | undefined; reason: string | undefined }) {
  const s = state ?? 'unknown';
  return (
    <div className={`capability capability-row-${s}`} data-capability={name}>
      <span className="capability-name">{name}</span>
      <CapabilityBadge state={s} />
      {reason ? <span className="capability-reason">{reason}</span> : null}
      {s === 'unknown' ? <span className="capability-note">Unknown: the evidence is not present. This is neither clean nor absent.</span> : null}
    </div>
  );
}

export function ProbedAt({ unix }: { unix: number | undefined }) {
  if (!unix) return <span className="unknown-text">never probed (unknown)</span>;
  return <span>{formatUnix(unix)}</span>;
}

export function IngestLagPanel({ lag }: { lag: IngestLag | undefined }) {
  if (!lag) return <p className="unknown-text">Ingest lag: not reported (unknown).</p>;
  const neverScraped = !lag.scrapedAtUnix;
  const untrustworthy = Boolean(lag.scrapeError) || neverScraped;
  return (
    <div className="ingest-lag" data-testid="ingest-lag">
      <dl className="detail compact">
        <dt>Ingest lag</dt>
        <dd>
          <strong className={untrustworthy ? 'untrustworthy' : ''}>{lag.lag}</strong>{' '}
          {lag.scrapeError ? (
            <span className="unknown-text">untrustworthy: completeness is unknown</span>
          ) : neverScraped ? (
            <span className="unknown-text">unknown: the sensor counters have never been read</span>
          ) : lag.lag > 0 ? (
            <span className="warning-text">kernel observations not reflected in stored findings: possible loss</span>
          ) : (
            <span className="muted">every observation the sensors counted is stored</span>
          )}
        </dd>
        <dt>Sensor counters read</dt>
        <dd>{lag.scrapedAtUnix ? formatUnix(lag.scrapedAtUnix) : <span className="unknown-text">never scraped (unknown)</span>}</dd>
        {lag.scrapeError ? (
          <>
            <dt>Scrape error</dt>
            <dd>
              <span className="error-text" role="note">
                {lag.scrapeError}
              </span>
            </dd>
          </>
        ) : null}
      </dl>
      {lag.perNode.length > 0 ? (
        <table className="table compact">
          <thead>
            <tr>
              <th>Node</th>
              <th>Recorded by the sensor</th>
              <th>Stored</th>
              <th>Lag</th>
            </tr>
          </thead>
          <tbody>
            {lag.perNode.map((n) => (
              <tr key={n.node}>
                <td>{n.node}</td>
                <td>{n.recorded ?? '—'}</td>
                <td>{n.stored ?? '—'}</td>
                <td>{n.lag}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      <p className="hint">Sensors flush about every 10 seconds, so a small transient lag is normal; a lag that persists signals loss.</p>
    </div>
  );
}

/** Shown above the numbers whenever the network detector stood down for the window. */
export function DetectorStoodDown({ reason }: { reason: string | undefined }) {
  return (
    <div className="notice detector-down" role="alert" data-testid="detector-down">
      <p>
        <strong>Network detector stood down</strong>
      </p>
      <p className="disabled-reason">{reason || 'No reason was given.'}</p>
      <p>This window is thinner, not cleaner: the counts below rest on DNS resolutions only.</p>
    </div>
  );
}

/** The headline count, never alone when the detector stood down. */
export function Headline({ count, detectorDown }: { count: number; detectorDown: boolean }) {
  return (
    <span className="headline">
      <strong>{count}</strong>
      {detectorDown ? <span className="qualifier"> DNS evidence only: network detector stood down</span> : null}
    </span>
  );
}
