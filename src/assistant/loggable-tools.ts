/**
 * The tools a chat used, as its log line names them: only the names Parley offered (its own
 * tools' and the MCP servers' `<server>__<tool>`). A name the model made up is the model's
 * own text, which can quote the user; it is counted, never written.
 */
export function loggableTools(
  used: Iterable<string>,
  offered: Readonly<Record<string, unknown>>,
): { tools: string[]; unknownTools?: number } {
  const tools: string[] = [];
  let unknown = 0;
  for (const name of used) {
    if (Object.hasOwn(offered, name)) tools.push(name);
    else unknown += 1;
  }
  return unknown > 0 ? { tools, unknownTools: unknown } : { tools };
}
