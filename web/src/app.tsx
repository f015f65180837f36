import { useEffect, useState } from 'preact/hooks';
import { AdminPage } from './admin.tsx';
import { api, signedOut } from './api.ts';
import { ChatPage } from './chat.tsx';
import { DocumentsPage } from './documents.tsx';
import { t } from './i18n.ts';
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

const PAGES = ['chat', 'documents', 'reminders', 'memories', 'graph', 'profile', 'admin'] as const;
type Page = (typeof PAGES)[number];

const pageOf = (hash: string): Page => {
  const name = hash.replace(/^#\/?/, '') as Page;
  return PAGES.includes(name) ? name : 'chat';
};

export function App() {
  const [session, setSession] = useState<Session | undefined>();
  const [page, setPage] = useState<Page>(pageOf(location.hash));

  useEffect(() => {
    api<Session>('/session').then(setSession, () =>
      setSession({ signed_in: false, role: null, user_id: null, development: false }),
    );
    const onHash = () => setPage(pageOf(location.hash));
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

  useEffect(() => {
    document.title = `${t[page]} · Parley`;
    document.getElementById('main')?.focus({ preventScroll: true });
  }, [page]);

  if (!session) return <p class="loading">{t.loading}</p>;
  if (!session.signed_in)
    return <SignIn development={session.development} onSignedIn={setSession} />;

  const signOut = async () => {
    await api('/session', { method: 'DELETE' }).catch(() => undefined);
    setSession({ ...session, signed_in: false, role: null, user_id: null });
  };
  const links = PAGES.filter((name) => name !== 'admin' || session.role === 'admin');
  const user = userOf(session);
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
        {page === 'chat' && <ChatPage user={user} />}
        {page === 'documents' && <DocumentsPage isAdmin={session.role === 'admin'} />}
        {page === 'reminders' && <RemindersPage user={user} />}
        {page === 'memories' && <MemoriesPage user={user} />}
        {page === 'graph' && <GraphPage user={user} />}
        {page === 'profile' && <ProfilePage user={user} />}
        {page === 'admin' && session.role === 'admin' && <AdminPage />}
      </main>
    </div>
  );
}
