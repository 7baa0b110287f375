/**
 * The console's one way to call the API. The session cookie (HttpOnly) rides along by itself; every
 * state-changing call also sends the session's CSRF token in X-CSRF-Token, as the server requires of
 * cookie-authenticated changes. A refusal becomes an ApiError carrying the server's own message,
 * which is what the screens show.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let csrfToken: string | null = null;

export function setCsrfToken(token: string | null): void {
  csrfToken = token;
}

/** Fired when the server no longer knows the session (expired, signed out elsewhere, token revoked). */
export const SESSION_ENDED_EVENT = 'reins:session-ended';

export async function api<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['x-csrf-token'] = csrfToken;
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The server could not be reached. Check the connection and try again.');
  }
  const text = await res.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const error = (data as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    const code = typeof error?.code === 'string' ? error.code : `http_${res.status}`;
    const message = typeof error?.message === 'string' ? error.message : `The server answered ${res.status} ${res.statusText}.`;
    if (res.status === 401 && !path.startsWith('/api/v1/auth/')) window.dispatchEvent(new Event(SESSION_ENDED_EVENT));
    throw new ApiError(res.status, code, message);
  }
  return data as T;
}

export const get = <T>(path: string) => api<T>('GET', path);
export const post = <T>(path: string, body: unknown = {}) => api<T>('POST', path, body);
export const put = <T>(path: string, body: unknown) => api<T>('PUT', path, body);
export const del = <T>(path: string) => api<T>('DELETE', path);

/** A query string from the set members of `params` ('' when none). */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const enc = encodeURIComponent;

export function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
