import { useCallback, useEffect, useState } from 'react';
import { get, messageOf } from './api';

export interface Resource<T> {
  data: T | null;
  error: string | null;
  loading: boolean;
  reload: () => void;
}

/** GETs `path` (skipped while null), again whenever it changes or `reload` is called. */
export function useResource<T>(path: string | null): Resource<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(path !== null);
  const [round, setRound] = useState(0);
  const reload = useCallback(() => setRound((r) => r + 1), []);

  useEffect(() => {
    if (path === null) return;
    let current = true;
    setLoading(true);
    get<T>(path)
      .then((d) => {
        if (!current) return;
        setData(d);
        setError(null);
      })
      .catch((err: unknown) => {
        if (current) setError(messageOf(err));
      })
      .finally(() => {
        if (current) setLoading(false);
      });
    return () => {
      current = false;
    };
  }, [path, round]);

  return { data, error, loading, reload };
}
