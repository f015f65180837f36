import { tool, zodSchema } from 'ai';
import { z } from 'zod';
import { ToolRefusal } from '../assistant/tool-refusal.ts';
import { GraphFullError, type GraphService } from '../graph/graph-service.ts';
import { TERM_MAX_CHARS } from '../graph/term-key.ts';
import { visibleText } from '../visible-text.ts';

const term = (what: string) => visibleText(z.string().min(1).max(TERM_MAX_CHARS)).describe(what);

const addRelationInput = zodSchema(
  z.object({
    subject: term('The entity the fact is about, e.g. "Minsu" or "my sister"'),
    relation: term('How they are related, e.g. "works at", "lives in", "likes"'),
    object: term('The other entity or value, e.g. "Samsung", "Busan"'),
  }),
);
const queryEntityInput = zodSchema(
  z.object({ name: term('The entity to look up (a person, place, thing…)') }),
);

/** Facts returned per query_entity call, newest first. */
const QUERY_LIMIT = 50;

/** `add_relation` / `query_entity`, bound to one user's graph. */
export function graphTools(context: { userId: string; graph: GraphService }) {
  return {
    add_relation: tool({
      description:
        'Remember a lasting fact about the user’s world as a relation (subject, relation, ' +
        'object), e.g. ("Minsu", "works at", "Samsung"). Only what the user told you.',
      inputSchema: addRelationInput,
      execute: async ({ subject, relation, object }) => {
        const added = await context.graph
          .add(context.userId, { subject, relation, object })
          .catch((error: unknown) => {
            // The graph's limit, in words the model passes on (any other throw is unexpected).
            if (error instanceof GraphFullError) throw new ToolRefusal('graph_full', error.message);
            throw error;
          });
        return { stored: added, already_known: !added };
      },
    }),
    query_entity: tool({
      description:
        'Look up what you know about an entity in the user’s knowledge graph: every relation ' +
        'where it is the subject or the object.',
      inputSchema: queryEntityInput,
      execute: async ({ name }) => {
        const triples = await context.graph.about(context.userId, name);
        return {
          relations: triples
            .slice(0, QUERY_LIMIT)
            .map(({ subject, relation, object }) => ({ subject, relation, object })),
          total: triples.length,
        };
      },
    }),
  };
}
