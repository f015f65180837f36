import { useEffect, useRef, useState } from 'preact/hooks';
import { api, enc } from './api.ts';
import { t } from './i18n.ts';
import { LoadFailed } from './load.tsx';
import { McpToolCounts, type ServerTools } from './mcp-tool-counts.tsx';

interface MyServer {
  id: string;
  name: string;
  transport: 'stdio' | 'http';
  allowed: boolean;
  enabled: boolean;
  held: boolean;
  has_credential: boolean;
  /** The server refused this user at their last connection (HTTP 401 or 403). */
  refused: { reason: string; since: string } | null;
  always_allowed: string[];
  tools: ServerTools;
}

/**
 * A user's MCP servers (issue 33): switch each on or off, store their own token for an HTTP
 * server (never shown again), make every tool ask again; see how many of each one's tools
 * their chats are offered.
 */
export function MyMcpServers(props: { user: string }) {
  const path = `/users/${enc(props.user)}/mcp-servers`;
  const [servers, setServers] = useState<MyServer[] | undefined>();
  const [status, setStatus] = useState<string | undefined>();
  /** Why the list could not be loaded: said, with "Try again" (else nothing showed at all). */
  const [loadError, setLoadError] = useState<string | undefined>();
  const [tokens, setTokens] = useState<Record<string, string>>({});
  /**
   * Counts loads: on a slow network an older load can answer after a newer one, and its list
   * (a server still on, say) must not replace what the newer one says.
   */
  const loads = useRef(0);
  const load = () => {
    const started = ++loads.current;
    setLoadError(undefined);
    return api<{ servers: MyServer[] }>(path).then(
      (body) =>
        started === loads.current && setServers(body.servers.filter((server) => server.allowed)),
      (e: Error) => started === loads.current && setLoadError(e.message),
    );
  };
  useEffect(() => {
    void load();
  }, [path]);
  const change = async (server: MyServer, body: Record<string, unknown>) => {
    const { enabled } = body;
    if (typeof enabled === 'boolean') {
      // Shown at once: until the list was loaded again, each redraw (the "Saved." notice)
      // showed the box as it was, and a second press then undid the first. A load already
      // under way is older than this change: its answer is not shown.
      loads.current += 1;
      setServers((shown) => shown?.map((s) => (s.id === server.id ? { ...s, enabled } : s)));
    }
    try {
      await api(`${path}/${enc(server.id)}`, { method: 'PUT', body });
      setStatus(t.saved);
      await load();
    } catch (failure) {
      setStatus((failure as Error).message);
      await load(); // what the server kept
    }
  };
  const failed = <LoadFailed what={t.myMcpServersNotLoaded} error={loadError} onRetry={load} />;
  if (!servers?.length) {
    return loadError ? (
      <>
        <h2>{t.mcpServers}</h2>
        {failed}
      </>
    ) : null;
  }
  return (
    <>
      <h2>{t.mcpServers}</h2>
      {failed}
      {servers.map((server) => (
        <div key={server.id} class="stack">
          <label class="check">
            <input
              type="checkbox"
              aria-describedby={server.tools.listed === null ? undefined : toolsId(server)}
              checked={server.enabled}
              // What the box shows now, not the opposite of the list's: pressed again before the
              // list was loaded again (a slow network), that sent the first press's value twice.
              onChange={(event) => change(server, { enabled: event.currentTarget.checked })}
            />{' '}
            {t.mcpUse(server.name)}
          </label>
          {server.held && <p class="muted">{t.mcpHeld}</p>}
          {server.refused && <p>{t.mcpRefused(server.refused.reason)}</p>}
          <McpToolCounts id={toolsId(server)} tools={server.tools} />
          {server.transport === 'http' && (
            <form
              class="inline"
              onSubmit={(e) => {
                e.preventDefault();
                void change(server, { credential: { value: tokens[server.id] ?? '' } }).then(() =>
                  setTokens({ ...tokens, [server.id]: '' }),
                );
              }}
            >
              <label>
                {t.mcpToken(server.name)}{' '}
                <input
                  type="password"
                  autocomplete="off"
                  required
                  value={tokens[server.id] ?? ''}
                  onInput={(e) =>
                    setTokens({ ...tokens, [server.id]: (e.target as HTMLInputElement).value })
                  }
                />
              </label>
              <button type="submit">{t.save}</button>
              {server.has_credential && (
                <button type="button" onClick={() => change(server, { credential: null })}>
                  {t.mcpRemoveToken}
                </button>
              )}
            </form>
          )}
          {server.always_allowed.length > 0 && (
            <p>
              {t.mcpAlwaysAllowed}: {server.always_allowed.join(', ')}{' '}
              <button type="button" onClick={() => change(server, { forget_always_allowed: true })}>
                {t.mcpAskAgain}
              </button>
            </p>
          )}
        </div>
      ))}
      {status && <p role="status">{status}</p>}
    </>
  );
}

const toolsId = (server: MyServer) => `mcp-tools-${server.id}`;
