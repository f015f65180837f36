import { ChatService } from './assistant/chat-service.ts';
import { ConversationService } from './assistant/conversation-service.ts';
import { noTracing } from './assistant/run-tracer.ts';
import { ConfigError, parseConfig, readEnvironment } from './config.ts';
import { DocumentService } from './documents/document-service.ts';
import { FeedbackForwarder } from './feedback/feedback-forwarder.ts';
import { FeedbackService } from './feedback/feedback-service.ts';
import { buildServer } from './http/server.ts';
import { connectLangSmith } from './integrations/langsmith.ts';
import { createLogger } from './logger.ts';
import { createChatModel } from './models/create-chat-model.ts';
import { ChatContextRepository } from './storage/chat-context-repository.ts';
import { DataDirLockedError } from './storage/data-dir-lock.ts';
import { openDatabase } from './storage/database.ts';
import { DocumentRepository } from './storage/document-repository.ts';
import { FeedbackRepository } from './storage/feedback-repository.ts';
import { MessageRepository } from './storage/message-repository.ts';
import { ReminderRepository } from './storage/reminder-repository.ts';
import { RunRepository } from './storage/run-repository.ts';
import { UserRepository } from './storage/user-repository.ts';
import { profileTools } from './tools/profile-tools.ts';
import { reminderTools } from './tools/reminder-tools.ts';

/**
 * Composition root: configuration → storage → services → HTTP. Nothing else reads the
 * environment or builds long-lived objects.
 */
async function main(): Promise<void> {
  const startedAt = performance.now();
  const config = parseConfig(readEnvironment());
  const logger = createLogger(config.LOG_LEVEL);

  const database = await openDatabase(config, logger);
  const { db } = database;
  const reminders = new ReminderRepository(db);
  const runs = new RunRepository(db);
  const users = new UserRepository(db);
  const shutdownSignal = new AbortController();
  const feedbackRepository = new FeedbackRepository(db);
  const langSmith = connectLangSmith(config, logger);
  const forwarder = langSmith
    ? new FeedbackForwarder({
        repository: feedbackRepository,
        sink: langSmith.feedbackSink,
        logger,
        backoffMs: config.FEEDBACK_RETRY_MS,
      })
    : undefined;

  const model = createChatModel(config, logger);
  const chats = new ChatService({
    model,
    contexts: new ChatContextRepository(db),
    runs,
    tools: ({ userId, today }) => ({
      ...reminderTools({ userId, today, reminders }),
      ...profileTools({ userId, users }),
    }),
    tracer: langSmith?.tracer ?? noTracing,
    logger,
    settings: {
      maxSteps: config.CHAT_MAX_STEPS,
      historyMaxTokens: config.HISTORY_MAX_TOKENS,
      maxRetries: config.LLM_MAX_RETRIES,
      chunkTimeoutMs: config.LLM_CHUNK_TIMEOUT_MS,
      toolTimeoutMs: config.TOOL_TIMEOUT_MS,
      logSteps: config.LANGGRAPH_VERBOSE,
      logThinking: config.THINK_VERBOSE,
    },
  });

  const app = await buildServer({
    apiToken: config.API_TOKEN,
    logger,
    ping: () => database.ping(),
    chats,
    chatSettings: {
      messageMaxChars: config.MESSAGE_MAX_CHARS,
      imageMaxBytes: config.IMAGE_MAX_BYTES,
      keepAliveMs: config.SSE_KEEPALIVE_MS,
      shutdown: shutdownSignal.signal,
    },
    conversations: new ConversationService(new MessageRepository(db)),
    documents: new DocumentService(new DocumentRepository(db)),
    feedback: new FeedbackService(feedbackRepository, () => forwarder?.kick()),
    reminders,
  });

  if (!config.API_TOKEN && !isLoopback(config.HOST)) {
    logger.warn(
      { host: config.HOST },
      'API_TOKEN is not set: anyone who can reach this address can use the service',
    );
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, graceMs: config.SHUTDOWN_GRACE_MS }, 'shutting down');
    // Open streams get the grace period to finish; then they are stopped (their partial
    // answers are stored as interrupted) and any connection left is cut.
    const force = setTimeout(() => {
      shutdownSignal.abort();
      setTimeout(() => app.server.closeAllConnections(), 1_000).unref();
    }, config.SHUTDOWN_GRACE_MS);
    force.unref();
    try {
      await app.close();
      await forwarder?.stop();
      await model.dispose?.();
      await langSmith?.flush();
      await database.close();
      logger.info('stopped');
      process.exitCode = 0;
    } catch (error) {
      logger.error({ err: error }, 'unclean shutdown');
      process.exitCode = 1;
    } finally {
      clearTimeout(force);
    }
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ host: config.HOST, port: config.PORT });
  forwarder?.start();
  const address = app.server.address();
  logger.info(
    {
      port: typeof address === 'object' && address ? address.port : config.PORT,
      engine: database.engine,
      startupMs: Math.round(performance.now() - startedAt),
    },
    'Parley is listening',
  );
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

main().catch((error: unknown) => {
  // Configuration and lock problems are the operator's to fix: one clear line, no stack.
  if (error instanceof ConfigError || error instanceof DataDirLockedError) {
    process.stderr.write(`parley: ${error.message}\n`);
  } else {
    process.stderr.write(
      `parley: could not start: ${error instanceof Error ? error.stack : error}\n`,
    );
  }
  process.exit(1);
});
