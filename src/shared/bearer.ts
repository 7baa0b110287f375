/** The bearer secret of an `Authorization` header, or null. */
export function bearerSecret(header: string | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1]! : null;
}
