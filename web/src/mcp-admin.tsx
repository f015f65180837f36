import { useState } from 'preact/hooks';
import { api, enc } from './api.ts';
import { t } from './i18n.ts';
import { LoadFailed } from './load.tsx';
import { useAdminList } from './use-admin-list.ts';

interface McpServer {
  id: string;
  name: string;
  transport: 'stdio' | 'http';
  command_line: string[] | null;
  env_names: string[];
  url: string | null;
  enabled: boolean;
  trusted: boolean;
  restricted: boolean;
  status: { state: string; reason: string | null; stderr: string | null; since: string | null };
  tools: { seen_fingerprint: string | null; approved: unknown[] | null; seen: unknown[] | null };
}

/**
 * The administrator's MCP servers (issue 33): add one (disabled until enabled, its exact
 * command shown first), enable or disable, trust its annotations, approve changed tools,
 * delete; why a server is down, with its stderr's last lines.
 */
export function McpServersSection() {
  const {
    items: servers,
    error,
    loadError,
    reload,
    act,
  } = useAdminList<McpServer>('/admin/mcp-servers', 'servers');
  const [form, setForm] = useState({
    name: '',
    transport: 'stdio',
    command: '',
    args: '',
    url: '',
  });

  const change = (server: McpServer, body: Record<string, unknown>) =>
    act(() => api(`/admin/mcp-servers/${enc(server.id)}`, { method: 'PATCH', body }));
  const field = (name: keyof typeof form) => ({
    value: form[name],
    onInput: (e: Event) => setForm({ ...form, [name]: (e.target as HTMLInputElement).value }),
  });

  return (
    <section aria-labelledby="mcp-title">
      <h2 id="mcp-title">{t.mcpServers}</h2>
      <form
        class="stack"
        aria-label={t.addMcpServer}
        onSubmit={(e) => {
          e.preventDefault();
          const body =
            form.transport === 'stdio'
              ? {
                  transport: 'stdio',
                  name: form.name,
                  command: form.command,
                  args: form.args.split('\n').filter((line) => line !== ''),
                }
              : { transport: 'http', name: form.name, url: form.url };
          void act(async () => {
            await api('/admin/mcp-servers', { method: 'POST', body });
            setForm({ name: '', transport: form.transport, command: '', args: '', url: '' });
          });
        }}
      >
        <label>
          {t.mcpName} <input required {...field('name')} />
        </label>
        <label>
          {t.mcpTransport}{' '}
          <select {...field('transport')}>
            <option value="stdio">stdio</option>
            <option value="http">Streamable HTTP</option>
          </select>
        </label>
        {form.transport === 'stdio' ? (
          <>
            <label>
              {t.mcpCommand} <input required {...field('command')} />
            </label>
            <label>
              {t.mcpArgs} <textarea rows={3} {...field('args')} />
            </label>
          </>
        ) : (
          <label>
            URL <input required type="url" {...field('url')} />
          </label>
        )}
        <button type="submit" class="primary">
          {t.addMcpServer}
        </button>
      </form>
      <LoadFailed what={t.mcpServersNotLoaded} error={loadError} onRetry={reload} />
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {servers?.map((server) => (
        <article key={server.id} class="card" aria-label={server.name}>
          <h3>{server.name}</h3>
          {server.command_line ? (
            <>
              <p>{t.mcpRuns}</p>
              <pre>{server.command_line.map((part) => JSON.stringify(part)).join(' ')}</pre>
              {server.env_names.length > 0 && (
                <p class="muted">
                  {t.mcpEnv}: {server.env_names.join(', ')}
                </p>
              )}
            </>
          ) : (
            <p>{server.url}</p>
          )}
          <p role="status">
            {t.mcpState[server.status.state as keyof typeof t.mcpState] ?? server.status.state}
            {server.status.reason && `: ${server.status.reason}`}
          </p>
          {server.status.stderr && (
            <details>
              <summary>{t.mcpStderr}</summary>
              <pre>{server.status.stderr}</pre>
            </details>
          )}
          {server.status.state === 'held' && (
            <details open>
              <summary>{t.mcpChangedTools}</summary>
              <pre>{JSON.stringify(server.tools.seen, null, 2)}</pre>
              <button
                type="button"
                onClick={() =>
                  act(() =>
                    api(`/admin/mcp-servers/${enc(server.id)}/approve-tools`, {
                      method: 'POST',
                      body: { fingerprint: server.tools.seen_fingerprint },
                    }),
                  )
                }
              >
                {t.mcpApproveTools}
              </button>
            </details>
          )}
          <div class="inline">
            <button type="button" onClick={() => change(server, { enabled: !server.enabled })}>
              {server.enabled ? t.mcpDisable : t.mcpEnable}
            </button>
            <label class="check">
              <input
                type="checkbox"
                checked={server.trusted}
                onChange={() => change(server, { trusted: !server.trusted })}
              />{' '}
              {t.mcpTrusted}
            </label>
            <button
              type="button"
              onClick={() =>
                act(() => api(`/admin/mcp-servers/${enc(server.id)}`, { method: 'DELETE' }))
              }
            >
              {t.mcpDelete}
            </button>
          </div>
        </article>
      ))}
    </section>
  );
}
