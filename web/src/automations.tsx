import { useState } from 'preact/hooks';
import { api, enc } from './api.ts';
import { t } from './i18n.ts';
import { LoadFailed, useResource } from './load.tsx';

type Weekday = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun';
const WEEKDAYS: Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
type Repeat = 'once' | 'daily' | 'weekdays' | 'weekly' | 'monthly' | 'every';

interface Automation {
  id: string;
  name: string;
  prompt: string;
  schedule_in_words: string;
  status: 'active' | 'paused' | 'finished';
  paused_reason: string | null;
  next_run_at: string | null;
  conversation_id: string | null;
  unread: number;
}

export interface AutomationList {
  automations: Automation[];
  unread: number;
}

/** Results not yet seen, for the navigation's mark; 0 when they cannot be read. */
export const unreadAutomations = (user: string) =>
  api<AutomationList>(`/users/${enc(user)}/automations`).then(
    (body) => body.unread,
    () => 0,
  );

/**
 * The user's automations: what each asks, its schedule in words, its unread results (the
 * answers are in its own conversation), and Pause / Resume / Run now / Delete automation.
 */
export function AutomationsPage(props: { user: string; onRead: () => void }) {
  const path = `/users/${enc(props.user)}/automations`;
  const [list, loadError, load] = useResource<AutomationList>(path);
  const [failure, setFailure] = useState<string | undefined>();
  const [notice, setNotice] = useState<string | undefined>();
  const [creating, setCreating] = useState(false);
  const act = (request: Promise<unknown>, after?: () => void) =>
    request.then(
      () => {
        setFailure(undefined);
        after?.();
        return load();
      },
      (error: Error) => setFailure(error.message),
    );
  const read = (automation: Automation) =>
    act(api(`${path}/${automation.id}/read`, { method: 'POST' }), props.onRead);

  return (
    <section aria-labelledby="automations-title">
      <h1 id="automations-title">{t.automations}</h1>
      <LoadFailed what={t.automationsNotLoaded} error={loadError} onRetry={load} />
      {failure && (
        <p role="alert" class="error">
          {failure}
        </p>
      )}
      {notice && <p role="status">{notice}</p>}
      <button type="button" aria-expanded={creating} onClick={() => setCreating(!creating)}>
        {t.newAutomation}
      </button>
      {creating && (
        <NewAutomation
          onCreate={(body) => act(api(path, { method: 'POST', body }), () => setCreating(false))}
        />
      )}
      {list && list.automations.length === 0 && <p>{t.noAutomations}</p>}
      <ul class="list">
        {list?.automations.map((automation) => (
          <li key={automation.id}>
            <div>
              <strong>{automation.name}</strong>{' '}
              {automation.unread > 0 && <span class="badge">{t.unread(automation.unread)}</span>}
              <p>{automation.schedule_in_words}</p>
              <p class="muted small">
                {automation.status === 'active' && automation.next_run_at
                  ? `${t.nextRun}: ${new Date(automation.next_run_at).toLocaleString()}`
                  : automation.status === 'paused'
                    ? t.paused
                    : t.finished}
              </p>
              {automation.paused_reason && <p class="muted small">{automation.paused_reason}</p>}
              {automation.conversation_id && (
                <a href={`#/c/${automation.conversation_id}`} onClick={() => void read(automation)}>
                  {t.openConversation}
                </a>
              )}
            </div>
            <div class="actions">
              {automation.unread > 0 && (
                <button type="button" onClick={() => read(automation)}>
                  {t.markRead}
                </button>
              )}
              {automation.status === 'active' && (
                <button
                  type="button"
                  onClick={() => act(api(`${path}/${automation.id}/pause`, { method: 'POST' }))}
                >
                  {t.pause}
                </button>
              )}
              {automation.status === 'paused' && (
                <button
                  type="button"
                  onClick={() => act(api(`${path}/${automation.id}/resume`, { method: 'POST' }))}
                >
                  {t.resume}
                </button>
              )}
              <button
                type="button"
                onClick={() =>
                  act(api(`${path}/${automation.id}/run`, { method: 'POST' }), () =>
                    setNotice(t.runQueued),
                  )
                }
              >
                {t.runNow}
              </button>
              <button
                type="button"
                onClick={() =>
                  confirm(t.confirmDeleteAutomation(automation.name)) &&
                  act(api(`${path}/${automation.id}`, { method: 'DELETE' }))
                }
              >
                {t.deleteAutomation}
              </button>
            </div>
          </li>
        ))}
      </ul>
    </section>
  );
}

function NewAutomation(props: { onCreate: (body: unknown) => void }) {
  const [repeat, setRepeat] = useState<Repeat>('daily');
  const [days, setDays] = useState<Weekday[]>(['mon']);
  const submit = (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const text = (name: string) => String(form.get(name) ?? '').trim();
    const time = text('time');
    const schedule =
      repeat === 'once'
        ? { type: repeat, date: text('date'), time }
        : repeat === 'weekly'
          ? { type: repeat, days, time }
          : repeat === 'monthly'
            ? { type: repeat, day: Number(text('day')), time }
            : repeat === 'every'
              ? { type: repeat, hours: Number(text('hours')) }
              : { type: repeat, time };
    props.onCreate({
      prompt: text('prompt'),
      schedule,
      ...(text('name') ? { name: text('name') } : {}),
    });
  };
  const toggle = (day: Weekday) =>
    setDays(days.includes(day) ? days.filter((d) => d !== day) : [...days, day]);
  return (
    <form class="stack" aria-label={t.newAutomation} onSubmit={submit}>
      <label>
        {t.prompt}
        {/* No maxLength here or on the name: it counts UTF-16 units, so a name of 100 held
            only 50 emoji. The server counts characters and says when either is too long. */}
        <textarea name="prompt" required rows={3} />
      </label>
      <label>
        {t.automationName}
        <input name="name" />
      </label>
      <label>
        {t.repeat}
        <select
          name="repeat"
          value={repeat}
          onChange={(event) =>
            setRepeat((event.currentTarget as HTMLSelectElement).value as Repeat)
          }
        >
          <option value="once">{t.repeatOnce}</option>
          <option value="daily">{t.repeatDaily}</option>
          <option value="weekdays">{t.repeatWeekdays}</option>
          <option value="weekly">{t.repeatWeekly}</option>
          <option value="monthly">{t.repeatMonthly}</option>
          <option value="every">{t.repeatEvery}</option>
        </select>
      </label>
      {repeat === 'once' && (
        <label>
          {t.date}
          <input name="date" type="date" required />
        </label>
      )}
      {repeat === 'weekly' && (
        <fieldset>
          <legend>{t.days}</legend>
          {WEEKDAYS.map((day, i) => (
            <label key={day}>
              <input type="checkbox" checked={days.includes(day)} onChange={() => toggle(day)} />
              {t.weekdays[i]}
            </label>
          ))}
        </fieldset>
      )}
      {repeat === 'monthly' && (
        <label>
          {t.dayOfMonth}
          <input name="day" type="number" min={1} max={31} required />
        </label>
      )}
      {repeat === 'every' ? (
        <label>
          {t.hours}
          <input name="hours" type="number" min={1} max={8760} required />
        </label>
      ) : (
        <label>
          {t.time}
          <input name="time" type="time" required />
        </label>
      )}
      <button type="submit">{t.save}</button>
    </form>
  );
}
