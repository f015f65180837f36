/**
 * SQL for a timestamptz as the API writes times (`Date.prototype.toISOString`: UTC,
 * milliseconds, `Z`), for a time inside JSON built in SQL (`json_build_object`). PostgreSQL
 * writes those as `…+00:00` with microseconds, while the same time in a column arrives as a
 * Date and is written with `Z`: one export had both forms. NULL stays null.
 */
export const isoTimeSql = (column: string): string =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
