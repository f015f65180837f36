import fastifyMultipart from '@fastify/multipart';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { actingUser } from '../../accounts/principal.ts';
import type { UsageLimits } from '../../accounts/usage-limits.ts';
import type {
  IngestAccess,
  IngestionService,
  UploadPart,
} from '../../documents/ingestion-service.ts';
import { AppError } from '../../errors.ts';
import type { App } from '../app-types.ts';
import { errorResponses, PER_USER } from '../error-responses.ts';
import { afterBodyOverLimit } from '../over-limit.ts';
import { userIdSchema } from '../schemas.ts';

/** Room for a 1,024-character source in any script (UTF-8) and a password. */
const FIELD_MAX_BYTES = 8 * 1024;

export function registerIngestRoutes(
  app: App,
  ingestion: IngestionService,
  maxBytes: number,
  limits: Pick<UsageLimits, 'admitIngest'>,
): void {
  // Multipart is parsed only here: every other route still answers it with 415.
  app.register(async (scope: App) => {
    await scope.register(fastifyMultipart, {
      limits: { fileSize: maxBytes, fieldSize: FIELD_MAX_BYTES, fields: 10, parts: 20 },
    });
    scope.post(
      '/ingest',
      {
        schema: {
          summary: 'Upload a document to index (PDF, text, Markdown, HTML, DOCX)',
          description:
            'multipart/form-data with the part `file` (required) and the fields `source` ' +
            '(default: the file name; 1–1,024 characters, no control characters) and `password` ' +
            '(for an encrypted PDF). Re-ingesting a source replaces it. With a user key the ' +
            'document is private to that user; the administrator uploads shared documents, or ' +
            'a private one for the user named in the field `user_id`.',
          tags: ['documents'],
          consumes: ['multipart/form-data'],
          response: {
            200: z.object({ chunks: z.number().int(), filename: z.string(), source: z.string() }),
            ...errorResponses(...PER_USER, 413, 415, 422, 429),
          },
        },
      },
      async (request, reply) => {
        // A client that disconnects stops its extraction.
        const gone = new AbortController();
        const parserErrors = new WeakSet<object>();
        reply.raw.on('close', () => {
          if (!reply.raw.writableFinished) gone.abort(new Error('client disconnected'));
        });
        try {
          const principal = request.principal;
          const access: IngestAccess = {
            owner: (fields) => {
              const named = fields.get('user_id');
              if (named !== undefined && !userIdSchema.safeParse(named).success) {
                throw new AppError(
                  'user_id_invalid',
                  422,
                  'The field "user_id" is not a valid user id.',
                );
              }
              if (principal.kind === 'user') return actingUser(principal, named);
              return named;
            },
            admit: (owner, bytes, source) => limits.admitIngest(principal, owner, bytes, source),
          };
          return await ingestion.ingest(uploadParts(request, parserErrors), access, gone.signal);
        } catch (caught) {
          const error = parserErrors.has(caught as object) ? malformed(caught) : caught;
          // Nobody to answer: not a server error, and nothing worth an error line in the log.
          if (request.raw.socket?.destroyed) {
            throw new AppError('client_disconnected', 499, 'The client disconnected.');
          }
          if (statusOf(error) === 413) afterBodyOverLimit(request, reply, maxBytes);
          throw error;
        }
      },
    );
  });
}

/**
 * A body the multipart parser cannot read (no boundary, garbage, cut before its closing
 * boundary) fails inside busboy with a plain Error, no code: without this it was a 500. The
 * parser's own coded errors (a file or field past its limit) keep their answers.
 */
function malformed(error: unknown): unknown {
  if (AppError.isInstance(error) || (error as { code?: unknown }).code !== undefined) return error;
  return new AppError(
    'multipart_invalid',
    422,
    'The body is not valid multipart/form-data (a missing or wrong boundary, or cut short).',
    { cause: error },
  );
}

/** The upload's parts; every error the parser raises (iterating, or in a file) is noted. */
async function* uploadParts(
  request: FastifyRequest,
  parserErrors: WeakSet<object>,
): AsyncGenerator<UploadPart> {
  const note = (error: unknown) => {
    if (error instanceof Error) parserErrors.add(error);
  };
  try {
    for await (const part of request.parts()) {
      if (part.type === 'file') {
        part.file.on('error', note);
        yield {
          type: 'file',
          fieldname: part.fieldname,
          filename: part.filename,
          stream: part.file,
        };
      } else {
        if (part.valueTruncated) {
          throw new AppError(
            'field_too_long',
            422,
            `The field "${part.fieldname}" is longer than ${FIELD_MAX_BYTES} bytes.`,
          );
        }
        yield { type: 'field', fieldname: part.fieldname, value: String(part.value) };
      }
    }
  } catch (error) {
    // Only the parser's errors reach here: a consumer's failure ends this generator by return.
    note(error);
    throw error;
  }
}

function statusOf(error: unknown): number | undefined {
  if (AppError.isInstance(error)) return error.status;
  return (error as { statusCode?: number }).statusCode;
}
