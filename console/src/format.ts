/** Display helpers. Everything they return is plain text, rendered by React as text nodes. */

const pad = (n: number) => String(n).padStart(2, '0');

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function formatUnix(seconds: number): string {
  return formatTime(new Date(seconds * 1000).toISOString());
}

export function formatDuration(seconds: number): string {
  if (seconds % 86_400 === 0) return `${seconds / 86_400} d`;
  if (seconds % 3_600 === 0) return `${seconds / 3_600} h`;
  if (seconds % 60 === 0) return `${seconds / 60} min`;
  return `${seconds} s`;
}

export function formatUsd(amount: number | null | undefined): string {
  if (amount === null || amount === undefined) return '';
  return `$${amount.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

export const REQUEST_TYPE_LABEL: Record<string, string> = {
  exception: 'Exception',
  model_access: 'Model access',
  budget_topup: 'Budget top-up',
};

export const REQUEST_STATE_LABEL: Record<string, string> = {
  pending: 'Pending',
  under_review: 'Under Review',
  approved: 'Approved',
  denied: 'Denied',
  active: 'Active',
  revoked: 'Revoked',
  expired: 'Expired',
  released: 'Released',
  stopped: 'Stopped',
  timed_out: 'Timed out',
};

/** The object of a request or grant in one phrase: the policy, the model or the amount. */
export function subjectOf(x: { type: string; targetPolicy?: string | null; policyName?: string | null; requestedModel?: string | null; model?: string | null; requestedAmountUsd?: number | null; amountUsd?: number | null }): string {
  if (x.type === 'exception') return `policy ${x.targetPolicy ?? x.policyName ?? '?'}`;
  if (x.type === 'model_access') return `model ${x.requestedModel ?? x.model ?? '?'}`;
  return `${formatUsd(x.requestedAmountUsd ?? x.amountUsd)} top-up`;
}

/** Identity ids typed in a field: separated by commas, spaces or new lines. */
export function parseIdList(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean))];
}
