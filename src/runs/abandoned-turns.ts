import type { ModelMessage } from 'ai';
import { questionTitle } from '../conversations/question-title.ts';
import { withoutThinking } from '../models/think-tags.ts';
import { isForeignKeyViolation, isUniqueViolation } from '../storage/database-errors.ts';
import type { RunRecord, RunRepository } from '../storage/run-repository.ts';
import type { AbandonedTurn } from './abandoned-runs.ts';

export interface AbandonedTurnDeps {
  runs: Pick<RunRepository, 'record'>;
  /** The user's current conversation (made when they have none). */
  currentConversation: (userId: string) => Promise<string>;
  /** The model id stored with the run. */
  model: string;
}

/**
 * Stores what is left of a run whose holder died, as the chat service stores an interrupted
 * one: the run, and in its conversation the question and the answer as far as it got (the
 * text its listeners saw, without the thinking), marked interrupted. A run registered without
 * a turn is stored without messages.
 */
export function storeAbandonedTurns(deps: AbandonedTurnDeps) {
  return async ({ runId, userId, startedAt, turn, text }: AbandonedTurn): Promise<void> => {
    const conversationId =
      turn && (turn.conversationId ?? (await deps.currentConversation(userId)));
    const answer = withoutThinking(text);
    const run: RunRecord = {
      id: runId,
      userId,
      model: deps.model,
      startedAt,
      turn:
        turn && conversationId
          ? {
              conversationId,
              parentRunId: turn.parentRunId,
              title: questionTitle(turn.question),
              branches: turn.parentRunId !== undefined,
            }
          : undefined,
    };
    const messages: ModelMessage[] = turn
      ? [
          { role: 'user', content: turn.question },
          ...(answer ? [{ role: 'assistant' as const, content: answer }] : []),
        ]
      : [];
    try {
      await deps.runs.record(
        run,
        { status: 'interrupted', toolsUsed: [], errorCode: 'run_interrupted' },
        messages,
      );
    } catch (error) {
      // Its holder stored the run after it was claimed (a holder that was only slow; one
      // that stored it before is seen by the claim, AbandonedRuns), or the user
      // deleted the conversation meanwhile: nothing is left to keep.
      if (isUniqueViolation(error) || isForeignKeyViolation(error)) return;
      throw error;
    }
  };
}
