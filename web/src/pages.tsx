import { useEffect, useState } from 'preact/hooks';
import { api, enc } from './api.ts';
import { t } from './i18n.ts';
import { LoadFailed, useResource } from './load.tsx';
import { MyMcpServers } from './mcp-user.tsx';

function Failure(props: { message: string | undefined }) {
  return props.message ? (
    <p role="alert" class="error">
      {props.message}
    </p>
  ) : null;
}

interface Reminder {
  id: string;
  title: string;
  date: string;
  time?: string;
  timezone: string;
  note?: string;
  notices_sent: string[];
}

export function RemindersPage(props: { user: string }) {
  const [body, error, reload] = useResource<{ reminders: Reminder[] }>(
    `/reminders/${enc(props.user)}`,
  );
  const [failure, setFailure] = useState<string | undefined>();
  const cancel = (id: string) =>
    api(`/reminders/${enc(props.user)}/${id}`, { method: 'DELETE' }).then(reload, (e: Error) =>
      setFailure(e.message),
    );
  return (
    <section aria-labelledby="reminders-title">
      <h1 id="reminders-title">{t.upcoming}</h1>
      <LoadFailed what={t.remindersNotLoaded} error={error} onRetry={reload} />
      <Failure message={failure} />
      {body && body.reminders.length === 0 && <p>{t.noReminders}</p>}
      <ul class="list">
        {body?.reminders.map((reminder) => (
          <li key={reminder.id}>
            <div>
              <strong>{reminder.title}</strong>{' '}
              <time dateTime={reminder.date}>
                {reminder.date}
                {reminder.time ? ` ${reminder.time}` : ''}
              </time>{' '}
              <span class="muted">{reminder.timezone}</span>
              {reminder.note && <p>{reminder.note}</p>}
              {reminder.notices_sent.length > 0 && (
                <p class="muted small">
                  {t.noticesSent}: {reminder.notices_sent.join(', ')}
                </p>
              )}
            </div>
            <button
              type="button"
              aria-label={`${t.cancel} ${reminder.title}`}
              onClick={() => cancel(reminder.id)}
            >
              {t.cancel}
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

export function MemoriesPage(props: { user: string }) {
  const path = `/users/${enc(props.user)}/memories`;
  const [body, error, reload] = useResource<{
    memories: Array<{ id: string; text: string; created_at: string }>;
  }>(path);
  const [failure, setFailure] = useState<string | undefined>();
  const remove = (suffix: string) =>
    api(path + suffix, { method: 'DELETE' }).then(reload, (e: Error) => setFailure(e.message));
  return (
    <section aria-labelledby="memories-title">
      <h1 id="memories-title">{t.memories}</h1>
      <LoadFailed what={t.memoriesNotLoaded} error={error} onRetry={reload} />
      <Failure message={failure} />
      {body && body.memories.length === 0 && <p>{t.noMemories}</p>}
      <ul class="list">
        {body?.memories.map((memory) => (
          <li key={memory.id}>
            <span>{memory.text}</span>
            <button
              type="button"
              aria-label={`${t.delete}: ${memory.text.slice(0, 40)}`}
              onClick={() => remove(`/${enc(memory.id)}`)}
            >
              {t.delete}
            </button>
          </li>
        ))}
      </ul>
      {body && body.memories.length > 0 && (
        <button type="button" onClick={() => confirm(t.confirmDeleteAll) && remove('')}>
          {t.deleteAll}
        </button>
      )}
    </section>
  );
}

export function GraphPage(props: { user: string }) {
  const path = `/users/${enc(props.user)}/graph`;
  const [body, error, reload] = useResource<{
    triples: Array<{ subject: string; relation: string; object: string }>;
  }>(path);
  const [failure, setFailure] = useState<string | undefined>();
  return (
    <section aria-labelledby="graph-title">
      <h1 id="graph-title">{t.graph}</h1>
      <LoadFailed what={t.graphNotLoaded} error={error} onRetry={reload} />
      <Failure message={failure} />
      {body && body.triples.length === 0 && <p>{t.noTriples}</p>}
      {body && body.triples.length > 0 && (
        <>
          <div class="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">{t.subject}</th>
                  <th scope="col">{t.relation}</th>
                  <th scope="col">{t.object}</th>
                </tr>
              </thead>
              <tbody>
                {body.triples.map((triple) => (
                  <tr key={`${triple.subject}|${triple.relation}|${triple.object}`}>
                    <td>{triple.subject}</td>
                    <td>{triple.relation}</td>
                    <td>{triple.object}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <button
            type="button"
            onClick={() =>
              confirm(t.confirmDeleteAll) &&
              api(path, { method: 'DELETE' }).then(reload, (e: Error) => setFailure(e.message))
            }
          >
            {t.deleteAll}
          </button>
        </>
      )}
    </section>
  );
}

interface Profile {
  display_name: string | null;
  timezone: string;
  timezone_set: boolean;
  telegram_chat_id: string | null;
}

interface Usage {
  chats_last_minute: number;
  tokens_today: number;
  ingest_mb_today: number;
  storage_mb: number;
  limits: Record<string, number>;
}

export function ProfilePage(props: { user: string }) {
  const path = `/users/${enc(props.user)}/profile`;
  const [profile, error, reload] = useResource<Profile>(path);
  const [usage, usageError, reloadUsage] = useResource<Usage>(`/users/${enc(props.user)}/usage`);
  const [name, setName] = useState('');
  const [zone, setZone] = useState('');
  const [status, setStatus] = useState<string | undefined>();
  const [link, setLink] = useState<{ command: string; deep_link: string | null } | undefined>();

  useEffect(() => {
    if (!profile) return;
    setName(profile.display_name ?? '');
    setZone(
      profile.timezone_set ? profile.timezone : Intl.DateTimeFormat().resolvedOptions().timeZone,
    );
  }, [profile]);

  const save = async (event: Event) => {
    event.preventDefault();
    try {
      await api(path, {
        method: 'PUT',
        body: { display_name: name.trim() || null, timezone: zone || null },
      });
      setStatus(t.saved);
    } catch (failure) {
      setStatus((failure as Error).message);
    }
  };
  const zones =
    typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [zone];
  const rows: Array<[string, number, string]> = usage
    ? [
        ['chats / min', usage.chats_last_minute, 'chats_per_minute'],
        ['tokens / day', usage.tokens_today, 'tokens_per_day'],
        ['ingest MB / day', usage.ingest_mb_today, 'ingest_mb_per_day'],
        ['storage MB', usage.storage_mb, 'storage_mb'],
      ]
    : [];
  return (
    <section aria-labelledby="profile-title">
      <h1 id="profile-title">{t.profile}</h1>
      {/* The form waits for the stored profile: without it, it stays disabled, so a failed
          load is said, with a way to ask again, rather than leaving a form that never opens. */}
      <LoadFailed what={t.profileNotLoaded} error={error} onRetry={reload} />
      <form class="stack" onSubmit={save}>
        <label for="display-name">{t.displayName}</label>
        <input
          id="display-name"
          // Until the stored profile is here, nothing can be typed or saved: it would replace
          // what was typed, and a save before it would clear the stored time zone.
          disabled={!profile}
          value={name}
          // No maxLength: it counts UTF-16 units, so 100 held only 50 emoji. The server counts
          // characters (100 of them) and says when a name is too long.
          onInput={(e) => setName((e.target as HTMLInputElement).value)}
        />
        <label for="timezone">{t.timezone}</label>
        <select
          id="timezone"
          disabled={!profile}
          value={zone}
          onChange={(e) => setZone((e.target as HTMLSelectElement).value)}
        >
          {zones.map((z) => (
            <option key={z} value={z}>
              {z}
            </option>
          ))}
        </select>
        <button type="submit" class="primary" disabled={!profile}>
          {t.save}
        </button>
        {status && <p role="status">{status}</p>}
      </form>
      <h2>{t.telegram}</h2>
      {profile?.telegram_chat_id && <p>✓ {profile.telegram_chat_id}</p>}
      <button
        type="button"
        onClick={() =>
          api<{ command: string; deep_link: string | null }>(
            `/users/${enc(props.user)}/telegram-link`,
            {
              method: 'POST',
            },
          ).then(setLink, (e: Error) => setStatus(e.message))
        }
      >
        {t.linkTelegram}
      </button>
      {link && (
        <p>
          <code>{link.command}</code>{' '}
          {link.deep_link && (
            <a href={link.deep_link} target="_blank" rel="noopener noreferrer">
              {t.openBot}
            </a>
          )}
        </p>
      )}
      <MyMcpServers user={props.user} />
      <h2>{t.usage}</h2>
      {/* Without it the table was silently not there. */}
      <LoadFailed what={t.usageNotLoaded} error={usageError} onRetry={reloadUsage} />
      {usage && (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">{t.usage}</th>
                <th scope="col">{t.used}</th>
                <th scope="col">{t.limit}</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(([label, used, limit]) => (
                <tr key={limit}>
                  <th scope="row">{label}</th>
                  <td>{used}</td>
                  <td>{usage.limits[limit] ? usage.limits[limit] : t.noLimit}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
