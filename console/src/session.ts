import { createContext, useContext } from 'react';
import type { Me, Role } from './types';

export const SessionContext = createContext<Me | null>(null);

/** Who is signed in; screens render only inside a session. */
export function useMe(): Me {
  const me = useContext(SessionContext);
  if (!me) throw new Error('useMe outside a session');
  return me;
}

export const isReader = (role: Role): boolean => role === 'admin' || role === 'viewer';

/** The title of a control a viewer sees disabled (Authentication 3: viewers read, they do not decide). */
export const VIEWER_CANNOT = 'Viewers can read this but cannot act on it: the admin role is needed.';
