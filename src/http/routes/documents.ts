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
        description: 'The shared documents; with a user key, that user’s private documents too.',
        tags: ['documents'],
        response: {
          200: z.object({ documents: z.array(z.string()) }),
          ...errorResponses(...AUTHENTICATED),
        },
      },
    },
    async (request) => ({
      documents: await documents.listSources(privateOwner(request.principal)),
    }),
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
