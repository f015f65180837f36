import { randomUUID } from 'node:crypto';
import { localDate, resolveTimezone } from '../assistant/local-time.ts';
import { AppError, notFound } from '../errors.ts';
import type { ReminderRecord, ReminderRepository } from '../storage/reminder-repository.ts';
import type { UserRepository } from '../storage/user-repository.ts';
import type { Clock } from './clock.ts';
import { addDays } from './zoned-time.ts';

/** How far ahead a reminder may be set: beyond a lifetime, a date is a typo. */
export const MAX_YEARS_AHEAD = 100;

export interface NewReminderInput {
  title: string;
  /** YYYY-MM-DD in the user's timezone. */
  date: string;
  /** HH:MM, 24-hour, local. */
  time?: string | undefined;
  note?: string | undefined;
}

export interface ReminderServiceOptions {
  reminders: ReminderRepository;
  users: UserRepository;
  clock: Clock;
  /** DEFAULT_TIMEZONE: for users whose profile names none. */
  defaultTimezone: string;
  /** REMINDERS_PER_USER. */
  perUser: number;
}

/** Reminders as users and the assistant see them: set, list, cancel. */
export class ReminderService {
  readonly #options: ReminderServiceOptions;

  constructor(options: ReminderServiceOptions) {
    this.#options = options;
  }

  /** The user's timezone and today's date there. */
  async userToday(userId: string): Promise<{ timezone: string; today: string }> {
    const profile = await this.#options.users.get(userId);
    const timezone = resolveTimezone(profile?.timezone ?? this.#options.defaultTimezone);
    return { timezone, today: localDate(this.#options.clock.now(), timezone) };
  }

  /** Stores a reminder; refuses a date in the past or more than MAX_YEARS_AHEAD ahead. */
  async create(userId: string, input: NewReminderInput): Promise<ReminderRecord> {
    const { timezone, today } = await this.userToday(userId);
    const latest = addDays(today, Math.round(MAX_YEARS_AHEAD * 365.25));
    if (input.date < today || input.date > latest) {
      const why = input.date < today ? 'is in the past' : 'is too far ahead';
      throw new AppError(
        'reminder_date_out_of_range',
        422,
        `The date ${input.date} ${why}: a reminder can be set from today (${today}, ${timezone}) to ${latest}.`,
      );
    }
    const record = {
      id: randomUUID(),
      userId,
      title: input.title,
      dueOn: input.date,
      time: input.time ?? null,
      note: input.note ?? null,
      timezone,
      createdAt: this.#options.clock.now(),
    };
    if (!(await this.#options.reminders.create(record, this.#options.perUser))) {
      throw new AppError(
        'reminders_limit',
        422,
        `Your reminders are at the limit (${this.#options.perUser}): delete some first.`,
      );
    }
    return { ...record, notices: [] };
  }

  /** The user's reminders, soonest first; those whose date has passed only when asked. */
  async list(userId: string, includePast = true): Promise<ReminderRecord[]> {
    const all = await this.#options.reminders.listForUser(userId);
    if (includePast) return all;
    const now = this.#options.clock.now();
    return all.filter((reminder) => reminder.dueOn >= localDate(now, reminder.timezone));
  }

  async cancel(userId: string, id: string): Promise<void> {
    if (!(await this.#options.reminders.delete(userId, id))) {
      throw notFound(`No reminder ${id} for this user.`);
    }
  }
}
