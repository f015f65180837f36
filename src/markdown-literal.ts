/**
 * Text of ours or the user's (an automation's name) put into Markdown that is converted for
 * Telegram: its inline marks are escaped with a backslash, as Markdown does, so `**Fish**`
 * or `snake_case_` shows as written instead of turning bold or losing characters.
 */
export const markdownLiteral = (text: string): string => text.replace(/[\\`*_~[\]]/g, '\\$&');
