import { useState } from 'preact/hooks';
import { ApiError, api } from './api.ts';
import type { Session } from './app.tsx';
import { t } from './i18n.ts';

export function SignIn(props: { development: boolean; onSignedIn: (session: Session) => void }) {
  const [value, setValue] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    const body =
      props.development && !value.startsWith('pk_') ? { user_id: value } : { key: value };
    try {
      props.onSignedIn(await api<Session>('/session', { method: 'POST', body }));
    } catch (failure) {
      const status = failure instanceof ApiError ? failure.status : 0;
      setError(
        status === 401
          ? t.signInFailed
          : status === 429
            ? t.tooManySignIns
            : String((failure as Error).message),
      );
    } finally {
      setBusy(false);
    }
  };

  const label = props.development ? t.userName : t.apiKey;
  return (
    <main class="sign-in" id="main" tabIndex={-1}>
      <h1>Parley</h1>
      <form onSubmit={submit}>
        <p id="sign-in-help">{props.development ? t.devHelp : t.signInHelp}</p>
        <label for="credential">{label}</label>
        <input
          id="credential"
          type={props.development ? 'text' : 'password'}
          autoComplete={props.development ? 'username' : 'current-password'}
          aria-describedby="sign-in-help"
          required
          value={value}
          onInput={(e) => setValue((e.target as HTMLInputElement).value)}
        />
        <button type="submit" disabled={busy}>
          {t.signIn}
        </button>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}
