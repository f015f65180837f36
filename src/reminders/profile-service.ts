import { resolveTimezone } from '../assistant/local-time.ts';
import type { ProfileChange, StoredProfile, UserRepository } from '../storage/user-repository.ts';
import type { Clock } from './clock.ts';
import { hashLinkCode, newLinkCode } from './link-code.ts';

/** How long a Telegram link code can be spent. */
export const LINK_CODE_TTL_MS = 60 * 60_000;

export interface ProfileView extends StoredProfile {
  /** The timezone in effect: the profile's, else DEFAULT_TIMEZONE. */
  effectiveTimezone: string;
}

export interface ProfileServiceOptions {
  users: UserRepository;
  clock: Clock;
  defaultTimezone: string;
  /** TELEGRAM_BOT_USERNAME, for the t.me deep link. */
  botUsername?: string | undefined;
}

/** The profile behind GET/PUT /users/{user_id}/profile, and Telegram link codes. */
export class ProfileService {
  readonly #options: ProfileServiceOptions;

  constructor(options: ProfileServiceOptions) {
    this.#options = options;
  }

  async get(userId: string): Promise<ProfileView> {
    const profile = await this.#options.users.get(userId);
    return this.#view(
      profile ?? {
        displayName: null,
        timezone: null,
        locale: null,
        telegramChatId: null,
        facts: {},
      },
    );
  }

  async update(userId: string, change: ProfileChange): Promise<ProfileView> {
    return this.#view(await this.#options.users.update(userId, change));
  }

  /** A new one-time code (the previous one stops working), to send the bot as /start <code>. */
  async issueLinkCode(userId: string) {
    const code = newLinkCode();
    const expiresAt = new Date(this.#options.clock.now().getTime() + LINK_CODE_TTL_MS);
    await this.#options.users.setLinkCode(userId, hashLinkCode(code), expiresAt);
    const bot = this.#options.botUsername;
    return {
      code,
      expiresAt,
      command: `/start ${code}`,
      deepLink: bot ? `https://t.me/${bot}?start=${code}` : null,
    };
  }

  #view(profile: StoredProfile): ProfileView {
    return {
      ...profile,
      effectiveTimezone: resolveTimezone(profile.timezone ?? this.#options.defaultTimezone),
    };
  }
}
