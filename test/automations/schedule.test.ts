import { describe, expect, it } from 'vitest';
import {
  anchored,
  latestOccurrence,
  nextOccurrence,
  type Schedule,
} from '../../src/automations/schedule.ts';
import { scheduleInWords } from '../../src/automations/schedule-words.ts';
import { zonedInstant } from '../../src/reminders/zoned-time.ts';

const NY = 'America/New_York';
const at = (iso: string) => new Date(iso);
/** The occurrences after `from`, `count` of them, as ISO strings. */
function occurrences(schedule: Schedule, timezone: string, from: string, count: number) {
  const out: string[] = [];
  let after = at(from);
  for (let i = 0; i < count; i++) {
    const next = nextOccurrence(schedule, timezone, after);
    if (!next) break;
    out.push(next.toISOString());
    after = next;
  }
  return out;
}

describe('automation schedules', () => {
  it('keeps 08:00 in New York across the March and November changes', () => {
    const daily: Schedule = { type: 'daily', time: '08:00' };
    // 2030: clocks go forward on Sunday March 10, back on Sunday November 3.
    expect(occurrences(daily, NY, '2030-03-08T14:00:00Z', 4)).toEqual([
      '2030-03-09T13:00:00.000Z', // EST, UTC-5
      '2030-03-10T12:00:00.000Z', // EDT, UTC-4
      '2030-03-11T12:00:00.000Z',
      '2030-03-12T12:00:00.000Z',
    ]);
    expect(occurrences(daily, NY, '2030-11-01T20:00:00Z', 3)).toEqual([
      '2030-11-02T12:00:00.000Z',
      '2030-11-03T13:00:00.000Z',
      '2030-11-04T13:00:00.000Z',
    ]);
  });

  it('runs a time the clocks skip at the next one that exists, and a doubled time once', () => {
    // 02:30 does not exist in New York on 2030-03-10: the clocks go from 02:00 to 03:00 EDT.
    expect(zonedInstant('2030-03-10', 150, NY).toISOString()).toBe('2030-03-10T07:00:00.000Z');
    expect(occurrences({ type: 'daily', time: '02:30' }, NY, '2030-03-09T00:00:00Z', 3)).toEqual([
      '2030-03-09T07:30:00.000Z',
      '2030-03-10T07:00:00.000Z',
      '2030-03-11T06:30:00.000Z',
    ]);
    // 01:30 happens twice on 2030-11-03 (EDT, then EST): the first.
    expect(occurrences({ type: 'daily', time: '01:30' }, NY, '2030-11-02T12:00:00Z', 2)).toEqual([
      '2030-11-03T05:30:00.000Z',
      '2030-11-04T06:30:00.000Z',
    ]);
  });

  it('does the same east of UTC: Berlin across both changes, and Lord Howe’s half hour', () => {
    const berlin = 'Europe/Berlin';
    // 2030: forward on Sunday March 31 (02:00 CET → 03:00 CEST), back on October 27.
    expect(
      occurrences({ type: 'daily', time: '02:30' }, berlin, '2030-03-30T00:00:00Z', 3),
    ).toEqual([
      '2030-03-30T01:30:00.000Z',
      '2030-03-31T01:00:00.000Z', // 03:00 CEST, the first minute after the gap
      '2030-04-01T00:30:00.000Z',
    ]);
    expect(
      occurrences({ type: 'daily', time: '02:30' }, berlin, '2030-10-26T00:00:00Z', 3),
    ).toEqual([
      '2030-10-26T00:30:00.000Z',
      '2030-10-27T00:30:00.000Z', // 02:30 CEST, not 02:30 CET an hour later
      '2030-10-28T01:30:00.000Z',
    ]);
    // Lord Howe goes back half an hour (02:00 → 01:30) on 2030-04-07: 01:45 happens twice.
    expect(zonedInstant('2030-04-07', 105, 'Australia/Lord_Howe').toISOString()).toBe(
      '2030-04-06T14:45:00.000Z',
    );
  });

  it('knows weekdays, chosen days, the month’s last day and once', () => {
    // 2030-03-01 is a Friday.
    expect(
      occurrences({ type: 'weekdays', time: '09:15' }, 'UTC', '2030-03-01T10:00:00Z', 3),
    ).toEqual(['2030-03-04T09:15:00.000Z', '2030-03-05T09:15:00.000Z', '2030-03-06T09:15:00.000Z']);
    expect(
      occurrences(
        { type: 'weekly', days: ['sun', 'wed'], time: '07:00' },
        'Asia/Seoul',
        '2030-03-01T00:00:00Z',
        3,
      ),
    ).toEqual(['2030-03-02T22:00:00.000Z', '2030-03-05T22:00:00.000Z', '2030-03-09T22:00:00.000Z']);
    expect(
      occurrences({ type: 'monthly', day: 31, time: '12:00' }, 'UTC', '2030-01-31T12:00:00Z', 3),
    ).toEqual(['2030-02-28T12:00:00.000Z', '2030-03-31T12:00:00.000Z', '2030-04-30T12:00:00.000Z']);
    const once: Schedule = { type: 'once', date: '2030-05-01', time: '18:00' };
    expect(occurrences(once, 'Europe/Paris', '2030-04-01T00:00:00Z', 3)).toEqual([
      '2030-05-01T16:00:00.000Z',
    ]);
  });

  it('counts real hours for every N hours, from the first run', () => {
    const every = anchored({ type: 'every', hours: 6 }, at('2030-03-09T23:00:00Z'));
    expect(every).toEqual({ type: 'every', hours: 6, starts_at: '2030-03-10T05:00:00.000Z' });
    expect(occurrences(every, NY, '2030-03-09T23:00:00Z', 3)).toEqual([
      '2030-03-10T05:00:00.000Z',
      '2030-03-10T11:00:00.000Z',
      '2030-03-10T17:00:00.000Z',
    ]);
  });

  it('collapses occurrences missed during downtime into the latest one', () => {
    const daily: Schedule = { type: 'daily', time: '08:00' };
    const due = at('2030-03-05T13:00:00Z');
    expect(latestOccurrence(daily, NY, due, at('2030-03-05T12:59:00Z'))).toBeUndefined();
    expect(latestOccurrence(daily, NY, due, at('2030-03-08T14:00:00Z'))?.toISOString()).toBe(
      '2030-03-08T13:00:00.000Z',
    );
    // A month down: still the latest, found without walking the month.
    expect(latestOccurrence(daily, NY, due, at('2030-04-08T11:00:00Z'))?.toISOString()).toBe(
      '2030-04-07T12:00:00.000Z',
    );
  });

  it('says the schedule in words', () => {
    expect(scheduleInWords({ type: 'weekdays', time: '08:00' }, NY)).toBe(
      'every weekday (Monday to Friday) at 08:00 (America/New_York)',
    );
    expect(
      scheduleInWords({ type: 'weekly', days: ['mon', 'wed', 'fri'], time: '18:30' }, 'UTC'),
    ).toBe('every Monday, Wednesday and Friday at 18:30 (UTC)');
  });
});
