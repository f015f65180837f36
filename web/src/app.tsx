import { useEffect, useState } from 'preact/hooks';
import { AdminPage } from './admin.tsx';
import { api, signedOut } from './api.ts';
import { AutomationsPage, unreadAutomations } from './automations.tsx';
import { type ChatRoute, ConversationsPage } from './conversations-page.tsx';
import { DocumentsPage } from './documents.tsx';
import { t } from './i18n.ts';
import { LoadFailed } from './load.tsx';
import { GraphPage, MemoriesPage, ProfilePage, RemindersPage } from './pages.tsx';
import { SignIn } from './sign-in.tsx';

export interface Session {
  signed_in: boolean;
  role: 'admin' | 'user' | null;
  user_id: string | null;
  development: boolean;
}

/** Whose data the pages show: the user's own, or `default` for the administrator (as the API has it). */
export const userOf = (session: Session) => session.user_id ?? 'default';

const PAGES = [
  'chat',
  'documents',
  'reminders',
  'automations',
  'memories',
  'graph',
  'profile',
  'admin',
] as const;
type Page = (typeof PAGES)[number];

/** A conversation's address: `#/c/<id>`, or `#/c/<id>/<run_id>` to open it at one turn. */
const CONVERSATION = /^#\/c\/([0-9a-f-]{36})(?:\/([0-9a-f-]{36}))?$/i;

const pageOf = (hash: string): Page => {
  if (CONVERSATION.test(hash)) return 'chat';
  const name = hash.replace(/^#\/?/, '') as Page;
  return PAGES.includes(name) ? name : 'chat';
};

let visits = 0;
const chatRouteOf = (hash: string): ChatRoute => {
  const [, conversation, turn] = CONVERSATION.exec(hash) ?? [];
  return { conversation, turn, visit: ++visits };
};

export function App() {
  const [session, setSession] = useState<Session | undefined>();
  /**
   * Why who is signed in could not be read (the server answers 503 when its database is
   * gone): said, with "Try again". It used to show the sign-in form, as if the session were
   * over.
   */
  const [sessionError, setSessionError] = useState<string | undefined>();
  const loadSession = () => {
    setSessionError(undefined);
    return api<Session>('/session').then(setSession, (e: Error) => setSessionError(e.message));
  };
  const [page, setPage] = useState<Page>(pageOf(location.hash));
  const [chatRoute, setChatRoute] = useState<ChatRoute>(() => chatRouteOf(location.hash));
  /** Automation results not yet seen: the mark beside "Automations". */
  const [unread, setUnread] = useState(0);
  const user = session && userOf(session);
  const refreshUnread = () => {
    if (user) void unreadAutomations(user).then(setUnread);
  };

  useEffect(() => {
    void loadSession();
    const onHash = () => {
      setPage(pageOf(location.hash));
      setChatRoute(chatRouteOf(location.hash));
    };
    const onSignedOut = () =>
      setSession(
        (current) => current && { ...current, signed_in: false, role: null, user_id: null },
      );
    window.addEventListener('hashchange', onHash);
    signedOut.addEventListener('signed-out', onSignedOut);
    return () => {
      window.removeEventListener('hashchange', onHash);
      signedOut.removeEventListener('signed-out', onSignedOut);
    };
  }, []);

  // Read at sign-in, on every page change, and every minute while the page is open.
  useEffect(() => {
    if (!session?.signed_in) return;
    refreshUnread();
    const timer = setInterval(refreshUnread, 60_000);
    return () => clearInterval(timer);
  }, [session?.signed_in, user, page]);

  useEffect(() => {
    document.title = `${t[page]} · Parley`;
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [page]);

  if (!session) {
    return sessionError ? (
      <main class="loading">
        <LoadFailed what={t.sessionNotLoaded} error={sessionError} onRetry={loadSession} />
      </main>
    ) : (
      <p class="loading">{t.loading}</p>
    );
  }
  if (!session.signed_in)
    return <SignIn development={session.development} onSignedIn={setSession} />;

  const signOut = async () => {
    await api('/session', { method: 'DELETE' }).catch(() => undefined);
    setSession({ ...session, signed_in: false, role: null, user_id: null });
  };
  const links = PAGES.filter((name) => name !== 'admin' || session.role === 'admin');
  const pageUser = userOf(session);
  return (
    <div class={`shell page-${page}`}>
      <header class="top">
        <span class="brand">Parley</span>
        <nav aria-label={t.nav}>
          <ul>
            {links.map((name) => (
              <li key={name}>
                <a href={`#/${name}`} aria-current={page === name ? 'page' : undefined}>
                  {t[name]}
                  {name === 'automations' && unread > 0 && (
                    <span class="badge">
                      <span aria-hidden="true">{unread}</span>
                      <span class="visually-hidden">{`, ${t.unread(unread)}`}</span>
                    </span>
                  )}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <span class="who">{session.role === 'admin' ? 'admin' : session.user_id}</span>
        <button type="button" onClick={signOut}>
          {t.signOut}
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {page === 'chat' && <ConversationsPage user={pageUser} route={chatRoute} />}
        {page === 'documents' && <DocumentsPage isAdmin={session.role === 'admin'} />}
        {page === 'reminders' && <RemindersPage user={pageUser} />}
        {page === 'automations' && <AutomationsPage user={pageUser} onRead={refreshUnread} />}
        {page === 'memories' && <MemoriesPage user={pageUser} />}
        {page === 'graph' && <GraphPage user={pageUser} />}
        {page === 'profile' && <ProfilePage user={pageUser} />}
        {page === 'admin' && session.role === 'admin' && <AdminPage />}
      </main>
    </div>
  );
}
