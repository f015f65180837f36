import { z } from 'zod';
import type { Principal } from '../../accounts/principal.ts';
import type { DocumentService } from '../../documents/document-service.ts';
import type { App } from '../app-types.ts';
import { AUTHENTICATED, errorResponses } from '../error-responses.ts';
import { sourceSchema } from '../schemas.ts';

export function registerDocumentRoutes(app: App, documents: DocumentService): void {
  app.get(
    '/documents',
    {
      schema: {
        summary: 'List the sources of ingested documents the caller can search',
        description:
          'The shared documents; with a user key (or a session made from one), that user’s ' +
          'private documents too, named again in `private`. The administrator gets `documents` ' +
          'alone, as the spec has it.',
        tags: ['documents'],
        response: {
          200: z.object({
            documents: z.array(z.string()),
            private: z
              .array(z.string())
              .optional()
              .describe(
                'With a user key or session only: which of `documents` are the user’s own ' +
                  'private documents, the ones that user may delete. The others are shared.',
              ),
          }),
          ...errorResponses(...AUTHENTICATED),
        },
      },
    },
    async (request) => {
      const owner = privateOwner(request.principal);
      const listed = await documents.listSources(owner);
      // Additive, and only for a user: the spec's shape stays exactly as it was for the
      // administrator (who has no private documents of their own).
      return owner === undefined
        ? { documents: listed.sources }
        : { documents: listed.sources, private: listed.private };
    },
  );

  app.delete(
    '/documents/*',
    {
      schema: {
        summary: 'Delete a source and all its chunks',
        description:
          'The rest of the path is the source, slashes included; percent-encoded characters are ' +
          'decoded. With a user key: one of that user’s private documents (403 for a shared one).',
        tags: ['documents'],
        params: z.object({ '*': sourceSchema }),
        response: {
          200: z.object({ deleted: z.string() }),
          ...errorResponses(...AUTHENTICATED, 403, 404, 422),
        },
      },
    },
    async (request) => {
      const source = request.params['*'];
      await documents.deleteSource(source, privateOwner(request.principal));
      return { deleted: source };
    },
  );
}

/** A user key reaches that user's private documents; the administrator the shared ones. */
const privateOwner = (principal: Principal) =>
  principal.kind === 'user' ? principal.userId : undefined;
