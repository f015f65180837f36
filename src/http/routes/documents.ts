import { z } from 'zod';
import type { DocumentService } from '../../documents/document-service.ts';
import type { App } from '../app-types.ts';
import { AUTHENTICATED, errorResponses } from '../error-responses.ts';
import { sourceSchema } from '../schemas.ts';

export function registerDocumentRoutes(app: App, documents: DocumentService): void {
  app.get(
    '/documents',
    {
      schema: {
        summary: 'List the sources of ingested documents',
        tags: ['documents'],
        response: {
          200: z.object({ documents: z.array(z.string()) }),
          ...errorResponses(...AUTHENTICATED),
        },
      },
    },
    async () => ({ documents: await documents.listSources() }),
  );

  app.delete(
    '/documents/*',
    {
      schema: {
        summary: 'Delete a source and all its chunks',
        description:
          'The rest of the path is the source, slashes included; percent-encoded characters are decoded.',
        tags: ['documents'],
        params: z.object({ '*': sourceSchema }),
        response: {
          200: z.object({ deleted: z.string() }),
          ...errorResponses(...AUTHENTICATED, 404, 422),
        },
      },
    },
    async (request) => {
      const source = request.params['*'];
      await documents.deleteSource(source);
      return { deleted: source };
    },
  );
}
