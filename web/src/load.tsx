import { useEffect, useState } from 'preact/hooks';
import { api } from './api.ts';
import { t } from './i18n.ts';

/**
 * Loads a resource once, with a way to load it again after a change or a failure. An earlier
 * failure is cleared as the next load starts: one that fails again is said (and announced)
 * again.
 */
export function useResource<T>(
  path: string,
): [T | undefined, string | undefined, () => Promise<void>] {
  const [value, setValue] = useState<T | undefined>();
  const [error, setError] = useState<string | undefined>();
  const load = () => {
    setError(undefined);
    return api<T>(path).then(
      (body) => {
        setValue(body);
        setError(undefined);
      },
      (failure: Error) => setError(failure.message),
    );
  };
  useEffect(() => {
    void load();
  }, [path]);
  return [value, error, load];
}

/**
 * A load that failed, said: what could not be loaded and why, with "Try again". Without it a
 * failed load left a blank, a form that never opened, or "Loading…" for good, and nothing but
 * reloading the whole page asked again.
 */
export function LoadFailed(props: {
  /** What could not be loaded ("Could not load your profile"). */
  what: string;
  error: string | undefined;
  onRetry: () => unknown;
}) {
  if (!props.error) return null;
  return (
    <div role="alert" class="error">
      <p>
        {props.what}: {props.error}
      </p>
      <button type="button" onClick={() => void props.onRetry()}>
        {t.tryAgain}
      </button>
    </div>
  );
}
