import { Notice } from '../../components/ui';

/** What a decision did, and the server's warnings (for example a budget rule that could not be raised). */
export interface OutcomeReport {
  message: string;
  warnings?: string[];
}

export function Outcome({ report, onDismiss }: { report: OutcomeReport | null; onDismiss: () => void }) {
  if (!report) return null;
  const warnings = report.warnings ?? [];
  return (
    <Notice kind={warnings.length > 0 ? 'warning' : 'success'}>
      <p>{report.message}</p>
      {warnings.length > 0 ? (
        <>
          <p>
            <strong>The server warned:</strong>
          </p>
          <ul className="warnings">
            {warnings.map((w, i) => (
              <li key={i}>{w}</li>
            ))}
          </ul>
        </>
      ) : null}
      <button type="button" className="btn plain small" onClick={onDismiss}>
        Dismiss
      </button>
    </Notice>
  );
}
