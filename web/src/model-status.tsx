import { useEffect, useState } from 'preact/hooks';
import { t } from './i18n.ts';

/** The `model` of GET /health (see src/http/routes/health.ts). */
interface ModelHealth {
  source: 'server' | 'file' | 'download';
  state: 'checking' | 'downloading' | 'ready' | 'failed' | 'unreachable' | 'refusing';
  downloaded_bytes?: number;
  total_bytes?: number;
  percent?: number;
  reason?: string;
}

/** How often /health is asked while the model is not ready. */
const POLL_MS: Record<string, number> = {
  checking: 1_000,
  downloading: 1_000,
  failed: 5_000,
  unreachable: 5_000,
  refusing: 5_000,
};
/** A state this page does not know (a newer server): asked again, but never in a tight loop. */
const POLL_OTHER_MS = 5_000;

const gigabytes = (bytes: number | undefined) => ((bytes ?? 0) / 1e9).toFixed(1);

/**
 * The first run of the embedded model: while it downloads, a progress bar and what the
 * assistant is waiting for; if it cannot be had, why (a download that resumes shows again).
 * A model server that the last request found not answering, or that refused it for its key
 * or model, says so and why, until it answers again. Nothing once the model is ready.
 */
export function ModelStatusBanner() {
  const [model, setModel] = useState<ModelHealth | undefined>();

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    const poll = async () => {
      let next: ModelHealth | undefined;
      try {
        const response = await fetch('/health', { credentials: 'same-origin' });
        next = ((await response.json()) as { model?: ModelHealth }).model;
      } catch {
        next = undefined; // the server is restarting: ask again
      }
      if (stopped) return;
      setModel(next);
      if (next?.state === 'ready') return;
      timer = setTimeout(poll, (next && POLL_MS[next.state]) || POLL_OTHER_MS);
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, []);

  if (model?.state === 'downloading') {
    return (
      <section class="model-status" aria-label={t.modelDownload}>
        <p class="model-status-text" role="status">
          {t.modelDownloading(model.percent ?? 0)}
          {model.total_bytes
            ? ` (${gigabytes(model.downloaded_bytes)} / ${gigabytes(model.total_bytes)} GB)`
            : ''}
        </p>
        <progress max={100} value={model.percent ?? 0} aria-label={t.modelDownload} />
      </section>
    );
  }
  if (model?.state === 'failed') {
    return (
      <section class="model-status error" aria-label={t.modelDownload}>
        <p class="model-status-text" role="alert">
          {t.modelFailed}: {model.reason}
        </p>
      </section>
    );
  }
  if (model?.state === 'unreachable' || model?.state === 'refusing') {
    return (
      <section class="model-status error" aria-label={t.modelServer}>
        <p class="model-status-text" role="alert">
          {model.state === 'unreachable' ? t.modelUnreachable : t.modelRefusing}: {model.reason}
        </p>
      </section>
    );
  }
  return null;
}
