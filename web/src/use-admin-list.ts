import { useEffect, useState } from 'preact/hooks';
import { api } from './api.ts';

/**
 * A list an admin section shows and changes: read from `path` (its `field`), read again after
 * every change; a failure to read or to change is the section's one error, cleared by the
 * next change.
 */
export function useAdminList<T>(path: string, field: string) {
  const [items, setItems] = useState<T[] | undefined>();
  const [error, setError] = useState<string | undefined>();
  const load = () =>
    api<Record<string, T[]>>(path).then(
      (body) => setItems(body[field]),
      (e: Error) => setError(e.message),
    );
  useEffect(() => {
    void load();
  }, [path]);
  /** Runs a change, then reads the list again. */
  const act = async (action: () => Promise<unknown>) => {
    try {
      setError(undefined);
      await action();
      await load();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };
  return { items, error, act };
}
