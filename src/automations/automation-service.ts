import { resolveTimezone } from '../assistant/local-time.ts';
import { AppError, notFound } from '../errors.ts';
import type { Clock } from '../reminders/clock.ts';
import { MAX_YEARS_AHEAD } from '../reminders/reminder-service.ts';
import type {
  AutomationRecord,
  AutomationRepository,
  AutomationRunRecord,
} from '../storage/automation-repository.ts';
import type { UserRepository } from '../storage/user-repository.ts';
import { anchored, intervalMinutes, nextOccurrence, type Schedule } from './schedule.ts';

export interface AutomationInput {
  name?: string | undefined;
  prompt: string;
  schedule: Schedule;
  /** IANA name; default: the user's profile timezone (or DEFAULT_TIMEZONE). */
  timezone?: string | undefined;
}

export interface AutomationChange {
  name?: string | undefined;
  prompt?: string | undefined;
  schedule?: Schedule | undefined;
  timezone?: string | undefined;
}

export interface AutomationServiceOptions {
  automations: AutomationRepository;
  users: UserRepository;
  clock: Clock;
  defaultTimezone: string;
  /** AUTOMATIONS_PER_USER. */
  perUser: number;
  /** AUTOMATION_MIN_INTERVAL_MINUTES. */
  minIntervalMinutes: number;
  /** A run was asked for ("run now"): sweep the automations' kind. */
  queued: () => void;
}

const NAME_CHARS = 60;
const YEAR_MS = 365.25 * 24 * 3_600_000;
const TURNED_OFF = 'Automations are turned off on this server (AUTOMATIONS_PER_USER is 0).';
const noAutomation = () => notFound('No such automation.');

/** Automations as users and the assistant see them: set, list, change, pause, run now. */
export class AutomationService {
  readonly #o: AutomationServiceOptions;

  constructor(options: AutomationServiceOptions) {
    this.#o = options;
  }

  async create(userId: string, input: AutomationInput): Promise<AutomationRecord> {
    const now = this.#o.clock.now();
    const timezone = input.timezone ?? (await this.#timezoneOf(userId));
    const schedule = this.#checked(anchored(input.schedule, now), timezone, now);
    const created = await this.#o.automations.create(
      {
        userId,
        name: input.name ?? nameOf(input.prompt),
        prompt: input.prompt,
        schedule,
        timezone,
        nextRunAt: nextOccurrence(schedule, timezone, now) ?? null,
        createdAt: now,
      },
      this.#o.perUser,
    );
    if (!created) {
      throw new AppError(
        'automations_limit',
        422,
        this.#o.perUser === 0
          ? TURNED_OFF
          : `Your automations are at the limit (${this.#o.perUser}): delete one first.`,
      );
    }
    return created;
  }

  list(userId: string): Promise<AutomationRecord[]> {
    return this.#o.automations.list(userId);
  }

  async get(userId: string, id: string): Promise<AutomationRecord> {
    const found = await this.#o.automations.get(userId, id);
    if (!found) throw noAutomation();
    return found;
  }

  /** A new schedule or timezone starts from now: occurrences already past are not run. */
  async change(userId: string, id: string, change: AutomationChange): Promise<AutomationRecord> {
    const current = await this.get(userId, id);
    const now = this.#o.clock.now();
    const timing = change.schedule !== undefined || change.timezone !== undefined;
    const timezone = change.timezone ?? current.timezone;
    // A new timezone alone moves the schedule too: a one-time automation it puts in the past
    // is refused, as a new schedule would be (else it stayed "active" and never ran).
    const schedule = change.schedule
      ? this.#checked(anchored(change.schedule, now), timezone, now)
      : change.timezone !== undefined
        ? this.#checked(current.schedule, timezone, now, { interval: false })
        : current.schedule;
    const next = nextOccurrence(schedule, timezone, now) ?? null;
    await this.#o.automations.update(userId, id, {
      name: change.name,
      prompt: change.prompt,
      schedule: change.schedule && schedule,
      timezone: change.timezone,
      ...(timing && {
        nextRunAt: next,
        // A finished one-time automation given a new time is active again.
        ...(current.status === 'finished' && next && { status: 'active' as const }),
      }),
    });
    return this.get(userId, id);
  }

  async pause(userId: string, id: string): Promise<AutomationRecord> {
    const current = await this.get(userId, id);
    if (current.status !== 'active') return current;
    await this.#o.automations.update(userId, id, { status: 'paused', pausedReason: null });
    return this.get(userId, id);
  }

  /** Runs again from the next occurrence: what was missed while paused is not run. */
  async resume(userId: string, id: string): Promise<AutomationRecord> {
    const current = await this.get(userId, id);
    if (current.status !== 'paused') return current;
    const next = nextOccurrence(current.schedule, current.timezone, this.#o.clock.now()) ?? null;
    await this.#o.automations.update(userId, id, {
      status: next ? 'active' : 'finished',
      nextRunAt: next,
      pausedReason: null,
      resetFailures: true,
    });
    return this.get(userId, id);
  }

  async delete(userId: string, id: string): Promise<void> {
    if (!(await this.#o.automations.delete(userId, id))) throw noAutomation();
  }

  /**
   * Queues a run now, whatever the schedule and status; it counts like any other run. Refused
   * while a run of the automation is queued or running: a second press would run it twice.
   */
  async runNow(userId: string, id: string): Promise<void> {
    // Turned off, nothing runs automations: a run queued now would wait for ever, and every
    // press after it be refused as "already queued".
    if (this.#o.perUser === 0) {
      await this.get(userId, id);
      throw new AppError('automations_off', 422, TURNED_OFF);
    }
    const queued = await this.#o.automations.queueManual(userId, id, this.#o.clock.now());
    if (!queued) throw noAutomation();
    if (queued === 'busy') {
      throw new AppError(
        'automation_run_busy',
        409,
        'A run of this automation is already queued or running; ask again once it has finished.',
      );
    }
    this.#o.queued();
  }

  async runs(userId: string, id: string, limit: number): Promise<AutomationRunRecord[]> {
    const runs = await this.#o.automations.runs(userId, id, limit);
    if (!runs) throw noAutomation();
    return runs;
  }

  async markRead(userId: string, id: string): Promise<void> {
    if (!(await this.#o.automations.markRead(userId, id, this.#o.clock.now()))) {
      throw noAutomation();
    }
  }

  async #timezoneOf(userId: string): Promise<string> {
    const profile = await this.#o.users.get(userId);
    return resolveTimezone(profile?.timezone ?? this.#o.defaultTimezone);
  }

  /** `interval: false` for a schedule kept as it was (the minimum may have risen since). */
  #checked(schedule: Schedule, timezone: string, now: Date, { interval = true } = {}): Schedule {
    const minimum = this.#o.minIntervalMinutes;
    if (interval && intervalMinutes(schedule) < minimum) {
      throw new AppError(
        'automation_too_often',
        422,
        `An automation runs at most every ${minimum} minutes (AUTOMATION_MIN_INTERVAL_MINUTES).`,
      );
    }
    const first = nextOccurrence(schedule, timezone, now);
    if (!first) {
      throw new AppError(
        'automation_in_the_past',
        422,
        `That time has passed (${timezone}): a one-time automation needs a time ahead.`,
      );
    }
    // A first run in the year 9999 passes every other check, never runs, holds one of the
    // user's places, and its time is no RFC 3339 date-time (year 10000 in a timezone west
    // of UTC): beyond a lifetime a date is a typo, as for reminders.
    if (first.getTime() - now.getTime() > MAX_YEARS_AHEAD * YEAR_MS) {
      throw new AppError(
        'automation_too_far_ahead',
        422,
        `The first run (${first.toISOString()}) is more than ${MAX_YEARS_AHEAD} years ahead: an automation starts within ${MAX_YEARS_AHEAD} years.`,
      );
    }
    return schedule;
  }
}

/**
 * A name from the prompt's first words, when none is given; cut between characters, not
 * UTF-16 units (half an emoji would be stored as U+FFFD). A prompt may hold control characters
 * that are not whitespace (ESC, BEL, NEL), a name may not: they part words like whitespace, else
 * the name shown would be one the API refuses when a client sends it back.
 */
function nameOf(prompt: string): string {
  const words = [...prompt.replace(/[\s\p{Cc}]+/gu, ' ').trim()];
  if (words.length <= NAME_CHARS) return words.join('');
  return `${words
    .slice(0, NAME_CHARS - 1)
    .join('')
    .trimEnd()}…`;
}
