import { useRef, useState } from 'preact/hooks';
import { ApiError, api, enc, upload } from './api.ts';
import { t } from './i18n.ts';
import { LoadFailed, useResource } from './load.tsx';

interface Item {
  key: string;
  file: File;
  state: 'queued' | 'uploading' | 'processing' | 'done' | 'error';
  progress: number;
  detail?: string | undefined;
  needsPassword?: boolean | undefined;
  password?: string | undefined;
}

/** GET /documents: `private` (with a user's session) names the user's own among them. */
interface Listing {
  documents: string[];
  private?: string[];
}

let counter = 0;

export function DocumentsPage(props: { isAdmin: boolean }) {
  const [body, loadError, refresh] = useResource<Listing>('/documents');
  const listing = body && { sources: body.documents, own: new Set(body.private) };
  const [items, setItems] = useState<Item[]>([]);
  const [error, setError] = useState<string | undefined>();
  const [dragging, setDragging] = useState(false);
  const input = useRef<HTMLInputElement>(null);

  const change = (key: string, patch: Partial<Item>) =>
    setItems((all) => all.map((item) => (item.key === key ? { ...item, ...patch } : item)));

  const add = (files: FileList | null | undefined) => {
    if (!files) return;
    setItems((all) => [
      ...all.filter((item) => item.state !== 'done'),
      ...[...files].map(
        (file): Item => ({ key: `f${++counter}`, file, state: 'queued', progress: 0 }),
      ),
    ]);
  };

  const send = async (item: Item) => {
    change(item.key, { state: 'uploading', progress: 0, detail: undefined });
    try {
      const fields: Record<string, string> = item.password ? { password: item.password } : {};
      const result = await upload(
        item.file,
        fields,
        (progress) => change(item.key, { progress }),
        () => change(item.key, { state: 'processing', progress: 1 }),
      );
      change(item.key, { state: 'done', detail: t.uploaded(result.chunks), needsPassword: false });
      void refresh();
    } catch (failure) {
      const detail = failure instanceof ApiError ? failure.message : String(failure);
      change(item.key, {
        state: 'error',
        detail,
        needsPassword:
          failure instanceof ApiError && failure.status === 422 && /password/i.test(detail),
      });
    }
  };

  const uploadAll = async () => {
    await Promise.all(items.filter((item) => item.state === 'queued').map(send));
  };

  const remove = async (source: string) => {
    try {
      await api(`/documents/${source.split('/').map(enc).join('/')}`, { method: 'DELETE' });
      void refresh();
    } catch (failure) {
      setError((failure as Error).message);
    }
  };

  return (
    <section aria-labelledby="documents-title">
      <h1 id="documents-title">{t.documents}</h1>
      {/* biome-ignore lint/a11y/noStaticElementInteractions: dropping is a mouse shortcut; the file picker is the keyboard's way */}
      <div
        class={`dropzone${dragging ? ' over' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          add(e.dataTransfer?.files);
        }}
      >
        <p>{t.dropFiles}</p>
        <label class="button" for="files">
          {t.chooseFiles}
        </label>
        <input
          id="files"
          ref={input}
          class="visually-hidden"
          type="file"
          multiple
          accept=".pdf,.txt,.md,.markdown,.html,.htm,.docx,application/pdf,text/*"
          onChange={(e) => {
            add((e.target as HTMLInputElement).files);
            (e.target as HTMLInputElement).value = '';
          }}
        />
        <button
          type="button"
          class="primary"
          onClick={uploadAll}
          disabled={!items.some((i) => i.state === 'queued')}
        >
          {t.upload}
        </button>
      </div>
      {items.length > 0 && (
        <ul class="uploads" aria-live="polite">
          {items.map((item) => (
            <li key={item.key} class={`upload ${item.state}`}>
              <span class="name">{item.file.name}</span>
              {item.state === 'uploading' && (
                <progress
                  max={1}
                  value={item.progress}
                  aria-label={`${t.uploading} ${item.file.name}`}
                />
              )}
              {item.state === 'processing' && (
                <span role="status">
                  <progress aria-label={`${t.processing} ${item.file.name}`} /> {t.processing}
                </span>
              )}
              {item.state === 'done' && <span role="status">{item.detail}</span>}
              {item.state === 'error' && (
                <span role="alert" class="error">
                  {item.detail}
                </span>
              )}
              {item.needsPassword && (
                <form
                  class="inline"
                  onSubmit={(e) => {
                    e.preventDefault();
                    void send(item);
                  }}
                >
                  <label>
                    {t.password}
                    <input
                      type="password"
                      autoComplete="off"
                      onInput={(e) =>
                        change(item.key, { password: (e.target as HTMLInputElement).value })
                      }
                    />
                  </label>
                  <button type="submit">{t.retry}</button>
                </form>
              )}
            </li>
          ))}
        </ul>
      )}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <h2>{t.sources}</h2>
      {/* Not "Loading…" for good: a list that could not be loaded is said, and asked again. */}
      <LoadFailed what={t.documentsNotLoaded} error={loadError} onRetry={refresh} />
      {listing === undefined ? (
        !loadError && <p>{t.loading}</p>
      ) : listing.sources.length === 0 ? (
        <p>{t.noDocuments}</p>
      ) : (
        <ul class="list" aria-label={t.sources}>
          {listing.sources.map((source) => {
            // A user deletes their own documents; the administrator, whose list is the
            // shared ones, deletes those (the server enforces the same).
            const own = listing.own.has(source);
            return (
              <li key={source}>
                <span>
                  {source} {!own && <span class="tag">{t.shared}</span>}
                </span>
                {(own || props.isAdmin) && (
                  <button
                    type="button"
                    aria-label={`${t.delete} ${source}`}
                    onClick={() => remove(source)}
                  >
                    {t.delete}
                  </button>
                )}
              </li>
            );
          })}
        </ul>
      )}
      {!props.isAdmin && <p class="muted small">{t.sharedNote}</p>}
    </section>
  );
}
