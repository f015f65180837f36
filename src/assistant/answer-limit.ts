/**
 * Longest an answer with nobody listening may take (a Telegram chat, an automation's run):
 * the run is stopped then. One limit for every such door, so an automation gets what a chat
 * gets. (Issue 32's ANSWER_MAX_SECONDS is to replace this constant with a setting.)
 */
export const ANSWER_MAX_MS = 30 * 60_000;
