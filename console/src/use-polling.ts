import { useEffect } from 'react';

/** Calls `tick` every `ms` while the page is visible: pending items appear without a manual refresh. */
export function usePolling(tick: () => void, ms: number): void {
  useEffect(() => {
    const id = window.setInterval(() => {
      if (document.visibilityState === 'visible') tick();
    }, ms);
    return () => window.clearInterval(id);
  }, [tick, ms]);
}
