import { describe, expect, it } from 'vitest';
import { dueNotice, noticeDueAt } from '../../src/reminders/notice-schedule.ts';

const reminder = (
  dueOn: string,
  timezone: string,
  createdAt: string,
  time: string | null = null,
) => ({
  dueOn,
  time,
  timezone,
  createdAt: new Date(createdAt),
});

describe('when a notice falls due', () => {
  it('is 09:00 local on its day, across a daylight-saving change', () => {
    // Los Angeles moves to PDT on 2030-03-10: D-7 is in PST, D-1 and D-0 in PDT.
    const r = reminder('2030-03-12', 'America/Los_Angeles', '2030-01-01T00:00:00Z');
    expect(noticeDueAt(r, 7).toISOString()).toBe('2030-03-05T17:00:00.000Z');
    expect(noticeDueAt(r, 1).toISOString()).toBe('2030-03-11T16:00:00.000Z');
    expect(noticeDueAt(r, 0).toISOString()).toBe('2030-03-12T16:00:00.000Z');
  });

  it('is an hour before an early time on the day itself, never before midnight', () => {
    const early = reminder('2030-01-20', 'Asia/Seoul', '2030-01-01T00:00:00Z', '08:30');
    expect(noticeDueAt(early, 0).toISOString()).toBe('2030-01-19T22:30:00.000Z'); // 07:30 KST
    const midnight = reminder('2030-01-20', 'Asia/Seoul', '2030-01-01T00:00:00Z', '00:15');
    expect(noticeDueAt(midnight, 0).toISOString()).toBe('2030-01-19T15:00:00.000Z'); // 00:00 KST
    expect(noticeDueAt(midnight, 1).toISOString()).toBe('2030-01-19T00:00:00.000Z'); // 09:00 KST
  });

  it('sends only the latest notice that is due, and nothing after the day', () => {
    const r = reminder('2030-02-10', 'UTC', '2030-01-01T00:00:00Z');
    expect(dueNotice(r, new Date('2030-02-03T08:59:59Z'))).toBeUndefined();
    expect(dueNotice(r, new Date('2030-02-03T09:00:00Z'))).toBe(7);
    expect(dueNotice(r, new Date('2030-02-09T12:00:00Z'))).toBe(1);
    expect(dueNotice(r, new Date('2030-02-10T23:59:59Z'))).toBe(0);
    expect(dueNotice(r, new Date('2030-02-11T00:00:00Z'))).toBeUndefined();
  });

  it('skips a notice whose day had passed when the reminder was set', () => {
    const inThreeDays = reminder('2030-02-10', 'UTC', '2030-02-07T20:00:00Z');
    expect(dueNotice(inThreeDays, new Date('2030-02-08T12:00:00Z'))).toBeUndefined();
    expect(dueNotice(inThreeDays, new Date('2030-02-09T09:00:00Z'))).toBe(1);
  });
});
