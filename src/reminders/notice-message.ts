import type { DaysBefore } from './notice-schedule.ts';

export interface NoticeContent {
  title: string;
  dueOn: string;
  time: string | null;
  note: string | null;
}

const HANGUL = /[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]/;
const KO_WEEKDAYS = ['일', '월', '화', '수', '목', '금', '토'];
const EN_WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];

/**
 * The text of a notice, plain (no Telegram markup to escape), in Korean when the reminder was
 * written in Korean or the user's locale is Korean, in English otherwise.
 */
export function noticeMessage(
  reminder: NoticeContent,
  daysBefore: DaysBefore,
  locale: string | null,
): string {
  const korean =
    HANGUL.test(reminder.title) ||
    HANGUL.test(reminder.note ?? '') ||
    (locale ?? '').toLowerCase().startsWith('ko');
  const weekday = new Date(`${reminder.dueOn}T00:00:00Z`).getUTCDay();
  const time = reminder.time ? ` ${reminder.time}` : '';
  const lines = korean
    ? [
        `🔔 리마인더 (D-${daysBefore}): ${reminder.title}`,
        `📅 ${reminder.dueOn} (${KO_WEEKDAYS[weekday]})${time}`,
        daysBefore === 0
          ? '오늘입니다.'
          : daysBefore === 1
            ? '내일입니다.'
            : `${daysBefore}일 남았습니다.`,
      ]
    : [
        `🔔 Reminder (D-${daysBefore}): ${reminder.title}`,
        `📅 ${EN_WEEKDAYS[weekday]} ${reminder.dueOn}${time}`,
        daysBefore === 0 ? 'Today.' : daysBefore === 1 ? 'Tomorrow.' : `In ${daysBefore} days.`,
      ];
  if (reminder.note) lines.push(`📝 ${reminder.note}`);
  return lines.join('\n');
}
