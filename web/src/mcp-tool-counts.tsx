import { t } from './i18n.ts';

/** What a user's chats get of one server's tools (`tools` of GET /users/{id}/mcp-servers). */
export interface ServerTools {
  listed: number | null;
  offered: number;
  left_out: { name: string; reason: 'tool_limit' | 'schema_too_large' | 'name_not_accepted' }[];
  listing_cut: boolean;
  stale_since: string | null;
}

/**
 * How many of a server's tools the user's chats offer and how many are left out (with which
 * and why, folded away), and a note when its listing was cut or could not be refreshed.
 * The counts and notes carry `id`, which the server's switch names as its description, so a
 * screen reader reads them with the switch. Nothing while it has not been listed yet.
 */
export function McpToolCounts(props: { id: string; tools: ServerTools }) {
  const { listed, offered, left_out, listing_cut, stale_since } = props.tools;
  if (listed === null) return null;
  return (
    <div>
      <div id={props.id}>
        <p>{t.mcpToolCounts(offered, left_out.length)}</p>
        {listing_cut && <p>{t.mcpListingCut}</p>}
        {stale_since && <p>{t.mcpListingStale(new Date(stale_since).toLocaleString())}</p>}
      </div>
      {left_out.length > 0 && (
        <details>
          <summary>{t.mcpLeftOut}</summary>
          <ul>
            {left_out.map((tool) => (
              <li key={tool.name}>
                <code>{tool.name}</code>: {t.mcpLeftOutReason[tool.reason]}
              </li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}
