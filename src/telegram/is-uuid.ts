import { z } from 'zod';

const UUID = z.uuid();

/** Whether a button's id is a UUID (as the HTTP routes check theirs), before any query. */
export const isUuid = (value: string): boolean => UUID.safeParse(value).success;
