import { useState } from 'preact/hooks';
import { api, enc } from './api.ts';
import { t } from './i18n.ts';
import { LoadFailed } from './load.tsx';
import { McpServersSection } from './mcp-admin.tsx';
import { useAdminList } from './use-admin-list.ts';

interface Account {
  user_id: string;
  limits: Record<string, number>;
  keys: Array<{
    key_id: string;
    prefix: string;
    last_used_at: string | null;
    expires_at: string | null;
  }>;
}

/** The administrator's page: users, keys, limits, deletion. */
export function AdminPage() {
  const {
    items: users,
    error,
    loadError,
    reload,
    act,
  } = useAdminList<Account>('/admin/users', 'users');
  const [newUser, setNewUser] = useState('');
  const [issued, setIssued] = useState<{ user: string; key: string } | undefined>();

  return (
    <section aria-labelledby="admin-title">
      <h1 id="admin-title">{t.users}</h1>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          void act(async () => {
            const created = await api<{ key: string }>('/admin/users', {
              method: 'POST',
              body: { user_id: newUser },
            });
            setIssued({ user: newUser, key: created.key });
            setNewUser('');
          });
        }}
      >
        <label for="new-user">{t.userId}</label>
        <input
          id="new-user"
          required
          value={newUser}
          onInput={(e) => setNewUser((e.target as HTMLInputElement).value)}
        />
        <button type="submit" class="primary">
          {t.createUser}
        </button>
      </form>
      {issued && <IssuedKey user={issued.user} value={issued.key} />}
      <LoadFailed what={t.usersNotLoaded} error={loadError} onRetry={reload} />
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {users?.map((user) => (
        <UserCard
          key={user.user_id}
          user={user}
          act={act}
          onKey={(key) => setIssued({ user: user.user_id, key })}
        />
      ))}
      <McpServersSection />
    </section>
  );
}

function IssuedKey(props: { user: string; value: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="issued" role="status">
      <p>
        {props.user}: {t.keyShownOnce}
      </p>
      <code>{props.value}</code>{' '}
      <button
        type="button"
        onClick={() => navigator.clipboard?.writeText(props.value).then(() => setCopied(true))}
      >
        {t.copy}
      </button>
      {copied && <span> {t.copied}</span>}
    </div>
  );
}

function UserCard(props: {
  user: Account;
  act: (action: () => Promise<unknown>) => Promise<void>;
  onKey: (key: string) => void;
}) {
  const { user, act } = props;
  const [limits, setLimits] = useState<Record<string, string>>(
    Object.fromEntries(Object.entries(user.limits).map(([k, v]) => [k, String(v)])),
  );
  const [confirmId, setConfirmId] = useState('');
  const base = `/admin/users/${enc(user.user_id)}`;
  const id = (suffix: string) => `${user.user_id}-${suffix}`.replace(/[^\w-]/g, '_');
  return (
    <article class="card" aria-labelledby={id('title')}>
      <h2 id={id('title')}>{user.user_id}</h2>
      <ul class="list">
        {user.keys.map((key) => (
          <li key={key.key_id}>
            <code>{key.prefix}…</code>
            <span class="muted small">{key.last_used_at ?? '—'}</span>
            <button
              type="button"
              aria-label={`${t.revoke} ${key.prefix}`}
              onClick={() => act(() => api(`/admin/keys/${key.key_id}`, { method: 'DELETE' }))}
            >
              {t.revoke}
            </button>
          </li>
        ))}
      </ul>
      <button
        type="button"
        onClick={() =>
          act(async () =>
            props.onKey(
              (await api<{ key: string }>(`${base}/keys`, { method: 'POST', body: {} })).key,
            ),
          )
        }
      >
        {t.newKey}
      </button>
      <form
        class="limits"
        onSubmit={(e) => {
          e.preventDefault();
          void act(() =>
            api(base, {
              method: 'PATCH',
              body: {
                limits: Object.fromEntries(Object.entries(limits).map(([k, v]) => [k, Number(v)])),
              },
            }),
          );
        }}
      >
        <fieldset>
          <legend>{t.limits}</legend>
          {Object.keys(limits).map((name) => (
            <label key={name}>
              {name}
              <input
                type="number"
                min={0}
                value={limits[name]}
                onInput={(e) =>
                  setLimits({ ...limits, [name]: (e.target as HTMLInputElement).value })
                }
              />
            </label>
          ))}
          <button type="submit">{t.save}</button>
        </fieldset>
      </form>
      <form
        class="inline danger"
        onSubmit={(e) => {
          e.preventDefault();
          if (confirmId === user.user_id) void act(() => api(base, { method: 'DELETE' }));
        }}
      >
        <label for={id('confirm')}>{t.typeToConfirm(user.user_id)}</label>
        <input
          id={id('confirm')}
          value={confirmId}
          autoComplete="off"
          onInput={(e) => setConfirmId((e.target as HTMLInputElement).value)}
        />
        <button type="submit" disabled={confirmId !== user.user_id}>
          {t.deleteUser}
        </button>
      </form>
    </article>
  );
}
