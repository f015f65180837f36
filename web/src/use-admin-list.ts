import { useState } from 'preact/hooks';
import { useResource } from './load.tsx';

/**
 * A list an admin section shows and changes: read from `path` (its `field`), read again after
 * every change. A failure to read it is `loadError` (said with "Try again", `reload`); a
 * failure to change is `error`, cleared by the next change.
 */
export function useAdminList<T>(path: string, field: string) {
  const [body, loadError, reload] = useResource<Record<string, T[]>>(path);
  const [error, setError] = useState<string | undefined>();
  /** Runs a change, then reads the list again. */
  const act = async (action: () => Promise<unknown>) => {
    try {
      setError(undefined);
      await action();
    } catch (failure) {
      setError((failure as Error).message);
      return;
    }
    await reload();
  };
  return { items: body?.[field], error, loadError, reload, act };
}
