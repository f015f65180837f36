import { z } from 'zod';

const UUID = z.uuid();

/**
 * Whether an id from outside a route's schema (a Telegram button's, a job's) is a UUID, as the
 * HTTP routes check theirs, before any query casts it.
 */
export const isUuid = (value: string): boolean => UUID.safeParse(value).success;
