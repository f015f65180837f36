import cluster from 'node:cluster';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AccountService } from './accounts/account-service.ts';
import { defaultLimits } from './accounts/limits.ts';
import { UsageLimits } from './accounts/usage-limits.ts';
import { WebSessions } from './accounts/web-sessions.ts';
import { type AnsweredTurn, ChatService } from './assistant/chat-service.ts';
import { noTracing } from './assistant/run-tracer.ts';
import { SharedUserChatLock } from './assistant/shared-user-chat-lock.ts';
import { LocalUserChatLock } from './assistant/user-chat-lock.ts';
import { automationJob, automationPolicy } from './automations/automation-job.ts';
import { AutomationService } from './automations/automation-service.ts';
import { createJobEngine } from './background/job-engine.ts';
import { withLease } from './background/job-lease.ts';
import { JobRunner, RETURN_MS } from './background/job-runner.ts';
import { type Config, isLoopbackHost } from './config.ts';
import { ConversationService } from './conversations/conversation-service.ts';
import { conversationTitleJob, TITLE_POLICY } from './conversations/title-job.ts';
import { createTitleWriter } from './conversations/title-writer.ts';
import { DocumentService } from './documents/document-service.ts';
import { EmbeddingDimension } from './documents/embedding-dimension.ts';
import { embeddingJob } from './documents/embedding-job.ts';
import { IngestionService } from './documents/ingestion-service.ts';
import { createQueryRewriter } from './documents/query-rewriter.ts';
import { FEEDBACK_POLICY, feedbackJob } from './feedback/feedback-job.ts';
import { FeedbackService } from './feedback/feedback-service.ts';
import { GraphService } from './graph/graph-service.ts';
import { graphPromptSection } from './graph/graph-summary.ts';
import { clearUnsentBackups } from './http/routes/backup.ts';
import { buildServer } from './http/server.ts';
import { loadWebClient } from './http/web-client.ts';
import { connectLangSmith } from './integrations/langsmith.ts';
import { createLogger } from './logger.ts';
import { CredentialCipher, parseCredentialsKey } from './mcp/credential-cipher.ts';
import { McpConnections } from './mcp/mcp-connections.ts';
import { McpTools } from './mcp/mcp-tools.ts';
import { ConversationMemory } from './memory/conversation-memory.ts';
import { createMemoryDecider } from './memory/memory-decider.ts';
import { MEMORY_POLICY, memoryDecisionJob } from './memory/memory-job.ts';
import { clusterMetricsText } from './metrics/cluster-metrics.ts';
import { meteredTracer } from './metrics/metered-tracer.ts';
import { Metrics } from './metrics/metrics.ts';
import { createChatModel } from './models/create-chat-model.ts';
import { createEmbedder } from './models/create-embedder.ts';
import { fileClock, systemClock } from './reminders/clock.ts';
import { NOTICE_POLICY, noticeJob } from './reminders/notice-job.ts';
import { ProfileService } from './reminders/profile-service.ts';
import { ReminderService } from './reminders/reminder-service.ts';
import { storeAbandonedTurns } from './runs/abandoned-turns.ts';
import { DetachedRuns } from './runs/detached-runs.ts';
import { stopOnSignals } from './shutdown.ts';
import { AccountRepository } from './storage/account-repository.ts';
import { AutomationRepository } from './storage/automation-repository.ts';
import { ChatContextRepository } from './storage/chat-context-repository.ts';
import { ChatTurnRepository } from './storage/chat-turn-repository.ts';
import { ConversationRepository } from './storage/conversation-repository.ts';
import { ConversationSearchRepository } from './storage/conversation-search-repository.ts';
import { openDatabase } from './storage/database.ts';
import { DocumentRepository } from './storage/document-repository.ts';
import { FailedJobRepository } from './storage/failed-job-repository.ts';
import { FeedbackRepository } from './storage/feedback-repository.ts';
import { GraphRepository } from './storage/graph-repository.ts';
import { HistoryRepository } from './storage/history-repository.ts';
import { LeaseRepository } from './storage/lease-repository.ts';
import { McpRepository } from './storage/mcp-repository.ts';
import { MemoryQueueRepository } from './storage/memory-queue-repository.ts';
import { NoticeRepository } from './storage/notice-repository.ts';
import { ReminderRepository } from './storage/reminder-repository.ts';
import { RunEventRepository } from './storage/run-event-repository.ts';
import { RunRepository } from './storage/run-repository.ts';
import { TelegramRepository } from './storage/telegram-repository.ts';
import { TitleRequestRepository } from './storage/title-request-repository.ts';
import { TurnRepository } from './storage/turn-repository.ts';
import { UsageRepository } from './storage/usage-repository.ts';
import { UserDataRepository } from './storage/user-data-repository.ts';
import { UserRepository } from './storage/user-repository.ts';
import { VectorStore } from './storage/vector-store.ts';
import { WebSessionRepository } from './storage/web-session-repository.ts';
import { telegramAutomationDelivery } from './telegram/automation-delivery.ts';
import { tellInterruptedChats } from './telegram/interrupted-answers.ts';
import { startTelegram } from './telegram/start-telegram.ts';
import { TelegramApi } from './telegram/telegram-api.ts';
import { telegramNotices } from './telegram/telegram-notices.ts';
import { tellUntoldAnswers } from './telegram/untold-answers.ts';
import { automationTools } from './tools/automation-tools.ts';
import { withCorrectiveFallback } from './tools/corrective-fallback.ts';
import { documentTools } from './tools/document-tools.ts';
import { graphTools } from './tools/graph-tools.ts';
import { profileTools } from './tools/profile-tools.ts';
import { reminderTools } from './tools/reminder-tools.ts';
import { visionTools } from './tools/vision-tools.ts';
import { webSearchTools } from './tools/web-search-tools.ts';
import { createImageIntake } from './vision/image-intake.ts';
import { visionModelFor } from './vision/vision-model.ts';
import { createWebSearch } from './web-search/web-search.ts';
import { uploadsDirOf } from './workers.ts';

/** Without JOB_LEASE_SECONDS: how long a resumable run's silent holder counts as alive. */
const RUN_LEASE_SECONDS = 30;

/**
 * After the grace period and a stopped job's RETURN_MS, how long the stop may still be busy
 * with the database before it is closed under whatever still waits on it.
 */
const DATABASE_CUT_AFTER_RETURN_MS = 500;

/** Users whose knowledge graphs stay cached in memory (validated against the table on use). */
const GRAPH_CACHE_USERS = 1_000;

/**
 * Composition root: configuration → storage → services → HTTP. Nothing else builds
 * long-lived objects. Started by launch.ts, once per process.
 */
export async function main(config: Config): Promise<void> {
  const startedAt = performance.now();
  const logger = cluster.worker
    ? createLogger(config.LOG_LEVEL).child({ worker: cluster.worker.id })
    : createLogger(config.LOG_LEVEL);
  // Before the database: a provider chosen without its URL or key stops start-up at once.
  const searchWeb = createWebSearch(config, logger);

  const database = await openDatabase(config, logger);
  const { db } = database;
  const backupsDir = join(config.DATA_DIR, 'backups');
  if (database.copyDataDir) {
    // The embedded engine's lock is ours now: what a killed run was still sending can go.
    const cleared = await clearUnsentBackups(backupsDir);
    if (cleared > 0) logger.info({ cleared }, 'removed backups a previous run left unsent');
  }
  const metrics = config.METRICS_ENABLED ? new Metrics() : undefined;
  metrics?.watchPool(db.$client);
  const runs = new RunRepository(db);
  const users = new UserRepository(db);
  // The test clock is a developer setting: production never names the file, and gets the
  // system clock.
  const clock = config.PARLEY_TEST_CLOCK_FILE
    ? fileClock(config.PARLEY_TEST_CLOCK_FILE)
    : systemClock;
  if (config.PARLEY_TEST_CLOCK_FILE) {
    logger.warn('PARLEY_TEST_CLOCK_FILE is set: time comes from a file (for tests only)');
  }
  const reminders = new ReminderService({
    reminders: new ReminderRepository(db),
    users,
    clock,
    defaultTimezone: config.DEFAULT_TIMEZONE,
    perUser: config.REMINDERS_PER_USER,
  });
  const profiles = new ProfileService({
    users,
    clock,
    defaultTimezone: config.DEFAULT_TIMEZONE,
    botUsername: config.TELEGRAM_BOT_USERNAME,
  });
  const telegram = config.TELEGRAM_BOT_TOKEN
    ? new TelegramApi({
        token: config.TELEGRAM_BOT_TOKEN,
        baseUrl: config.TELEGRAM_API_BASE,
        now: () => clock.now().getTime(),
        callTimeoutMs: config.TELEGRAM_CALL_TIMEOUT_MS,
        downloadTimeoutMs: config.TELEGRAM_DOWNLOAD_TIMEOUT_MS,
      })
    : undefined;
  // Every kind of background work runs on one job engine, each from its own table.
  const lease = config.JOB_LEASE_SECONDS;
  const jobLogger = logger.child({ component: 'jobs' });
  // Supervision runs every half lease, at most every 60 s: with no JOB_LEASE_SECONDS, every
  // kind's own lease is 120 s or more, and the memory decisions' is the shortest.
  const boss = createJobEngine(db.$client, jobLogger, {
    leaseSeconds: lease ?? MEMORY_POLICY.leaseSeconds,
  });
  const jobs = new JobRunner(boss, jobLogger, metrics);
  if (telegram) {
    jobs.add(
      noticeJob({
        notices: new NoticeRepository(db),
        channel: telegramNotices(telegram),
        clock,
        logger: logger.child({ component: 'reminders' }),
        policy: withLease(
          { ...NOTICE_POLICY, intervalMs: config.REMINDER_INTERVAL_SECONDS * 1000 },
          lease,
        ),
        defaultChatId: config.TELEGRAM_DEFAULT_CHAT_ID,
        ticked: metrics && ((outcome) => metrics.reminderTick(outcome)),
      }),
    );
  }
  const shutdownSignal = new AbortController();
  const feedbackRepository = new FeedbackRepository(db);
  const langSmith = await connectLangSmith(config, logger);
  if (langSmith) {
    jobs.add(
      feedbackJob(feedbackRepository, langSmith.feedbackSink, {
        ...withLease(FEEDBACK_POLICY, lease),
        backoffMs: config.FEEDBACK_RETRY_MS,
      }),
    );
  }

  const model = await createChatModel(config, logger);
  const embedder = createEmbedder(config, logger);
  if (embedder && !database.capabilities.vector) {
    logger.warn(
      { embeddings: embedder.id },
      'embeddings are configured but the database has no pgvector: document search is lexical only',
    );
  }
  const semantic =
    embedder && database.capabilities.vector
      ? (() => {
          const vectors = new VectorStore(db);
          const dimension = new EmbeddingDimension();
          jobs.add(
            embeddingJob({
              embedder,
              dimension,
              vectors,
              logger,
              batchSize: config.EMBEDDINGS_BATCH_SIZE,
              retryMs: config.EMBEDDINGS_RETRY_MS,
            }),
          );
          const indexer = { kick: () => jobs.kick('embedding_batch') };
          return {
            embedder,
            dimension,
            vectors,
            indexer,
            vectorWeight: config.HYBRID_VECTOR_WEIGHT,
          };
        })()
      : undefined;
  const documentRepository = new DocumentRepository(db);
  const documents = new DocumentService({
    documents: documentRepository,
    chunking: { maxTokens: config.CHUNK_MAX_TOKENS, overlapTokens: config.CHUNK_OVERLAP_TOKENS },
    logger,
    semantic,
    verbose: config.RAG_VERBOSE,
  });
  const rewrite = config.QUERY_REWRITE_ENABLED
    ? createQueryRewriter(model, logger, config.RAG_VERBOSE)
    : undefined;
  const images = createImageIntake(config, logger);
  // Nothing is contacted until the first image is analysed (spec rule 1).
  const vision = images.refusal === undefined ? visionModelFor(config) : undefined;
  const graph = new GraphService(new GraphRepository(db), {
    maxTriples: config.GRAPH_MAX_TRIPLES,
    cacheUsers: GRAPH_CACHE_USERS,
  });
  const crag =
    config.CRAG_ENABLED && searchWeb
      ? { search: searchWeb, logger, verbose: config.RAG_VERBOSE }
      : undefined;
  if (config.CRAG_ENABLED && !searchWeb) {
    logger.warn('CRAG_ENABLED is set but WEB_SEARCH_PROVIDER is none: there is no web fallback');
  }
  const conversationRepository = new ConversationRepository(db);
  // The decision uses the chat model; what it keeps is searched by search_documents.
  const memoryQueue = new MemoryQueueRepository(db);
  const memory = config.CONV_RAG_ENABLED
    ? new ConversationMemory({
        queue: memoryQueue,
        documents,
        queued: () => jobs.kick('memory_decision'),
        conversationsOf: (userId, runIds) =>
          conversationRepository.conversationsOfRuns(userId, runIds),
      })
    : undefined;
  if (memory) {
    jobs.add(
      memoryDecisionJob({
        queue: memoryQueue,
        documents,
        decide: createMemoryDecider(model),
        logger: logger.child({ component: 'memory' }),
        policy: { ...withLease(MEMORY_POLICY, lease), backoffMs: config.MEMORY_RETRY_MS },
      }),
    );
  }
  // One process owns the embedded engine's data, so its own lock is exact there.
  const chatLock =
    database.engine === 'server'
      ? new SharedUserChatLock({
          queue: new ChatTurnRepository(db),
          logger: logger.child({ component: 'chat-turns' }),
          ttlMs: config.CHAT_TURN_TTL_SECONDS * 1000,
        })
      : new LocalUserChatLock();
  // Titles by the model after a conversation's first answer, in the background.
  const titleRequests =
    config.CONVERSATION_TITLES === 'model' ? new TitleRequestRepository(db) : undefined;
  if (titleRequests) {
    jobs.add(
      conversationTitleJob({
        requests: titleRequests,
        conversations: conversationRepository,
        write: createTitleWriter(model),
        logger: logger.child({ component: 'conversations' }),
        policy: withLease(TITLE_POLICY, lease),
      }),
    );
  }
  const onAnswered = async (turn: AnsweredTurn) => {
    const { runId, userId, conversationId, question, answer } = turn;
    await Promise.all([
      memory?.enqueue({ runId, userId, question, answer }),
      conversationId &&
        titleRequests?.request(conversationId).then((queued) => {
          if (queued) jobs.kick('conversation_title');
        }),
    ]);
  };
  const automationRepository = new AutomationRepository(db, config.AUTOMATION_RUNS_KEPT);
  const automations = new AutomationService({
    automations: automationRepository,
    users,
    clock,
    defaultTimezone: config.DEFAULT_TIMEZONE,
    perUser: config.AUTOMATIONS_PER_USER,
    minIntervalMinutes: config.AUTOMATION_MIN_INTERVAL_MINUTES,
    queued: () => jobs.kick('automation_run'),
  });
  const conversations = new ConversationService({
    conversations: conversationRepository,
    perUser: config.CONVERSATIONS_PER_USER,
    history: new HistoryRepository(db),
    turns: new TurnRepository(db),
    search: new ConversationSearchRepository(db),
    lock: chatLock,
    forgetMemories: memory && ((userId, runIds) => memory.forgetRuns(userId, runIds)),
  });
  // MCP servers' tools (issue 33): the servers are in the database, so every replica has them.
  const mcpRepository = new McpRepository(db, {
    approvalMaxAgeSeconds: config.MCP_APPROVAL_TIMEOUT_SECONDS,
  });
  const mcpLogger = logger.child({ component: 'mcp' });
  const mcpConnections = new McpConnections({
    connectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS,
    idleMs: config.MCP_IDLE_SECONDS * 1000,
    logger: mcpLogger,
    onFailure: (serverId, failure) => {
      mcpRepository
        .recordFailure(serverId, failure?.reason ?? null, failure?.stderr ?? null)
        .catch((error: unknown) => mcpLogger.warn({ err: error }, 'mcp server status not stored'));
    },
    onRefused: (serverId, userId, reason) => {
      mcpRepository
        .recordRefusal(serverId, userId, reason)
        .catch((error: unknown) => mcpLogger.warn({ err: error }, 'mcp refusal not stored'));
    },
    onListing: (serverId, state) => {
      mcpRepository
        .recordListingState(serverId, state)
        .catch((error: unknown) => mcpLogger.warn({ err: error }, 'mcp listing state not stored'));
    },
  });
  const credentialsKey = config.MCP_CREDENTIALS_KEY
    ? parseCredentialsKey(config.MCP_CREDENTIALS_KEY)
    : undefined;
  const mcpCipher = credentialsKey ? new CredentialCipher(credentialsKey) : undefined;
  const mcpToolLimits = {
    maxTools: config.MCP_MAX_TOOLS,
    schemaMaxChars: config.MCP_TOOL_SCHEMA_MAX_CHARS,
  };
  const mcpTools = new McpTools({
    repository: mcpRepository,
    connections: mcpConnections,
    cipher: mcpCipher,
    logger,
    onCall: metrics && ((server, outcome, ms) => metrics.mcpCall(server, outcome, ms)),
    settings: {
      callTimeoutMs: config.MCP_CALL_TIMEOUT_MS,
      callMaxMs: config.MCP_CALL_MAX_MS,
      resultMaxChars: config.MCP_RESULT_MAX_CHARS,
      callsPerAnswer: config.MCP_CALLS_PER_ANSWER,
      descriptionMaxChars: config.MCP_DESCRIPTION_MAX_CHARS,
      approvalTimeoutMs: config.MCP_APPROVAL_TIMEOUT_SECONDS * 1000,
      connectTimeoutMs: config.MCP_CONNECT_TIMEOUT_MS,
      limits: mcpToolLimits,
    },
  });
  const chats = new ChatService({
    model,
    contexts: new ChatContextRepository(db),
    runs,
    lock: chatLock,
    conversations,
    tools: ({ userId, image, afterAnswer }) => ({
      ...reminderTools({ userId, reminders }),
      ...profileTools({ userId, users }),
      ...(config.AUTOMATIONS_PER_USER > 0 ? automationTools({ userId, automations }) : {}),
      ...withCorrectiveFallback(
        documentTools({
          userId,
          documents,
          topK: config.SEARCH_TOP_K,
          rewrite,
          afterAnswer: config.RAG_SHOW_SOURCES ? afterAnswer : undefined,
        }),
        crag,
      ),
      ...(searchWeb ? webSearchTools({ search: searchWeb }) : {}),
      ...(image && vision ? visionTools({ image, vision, logger }) : {}),
      ...(config.GRAPH_ENABLED ? graphTools({ userId, graph }) : {}),
    }),
    moreTools: (context) => mcpTools.toolsFor(context),
    promptSections: config.GRAPH_ENABLED
      ? [graphPromptSection(graph, config.GRAPH_PROMPT_MAX_CHARS)]
      : [],
    tracer: metrics
      ? meteredTracer(langSmith?.tracer ?? noTracing, metrics)
      : (langSmith?.tracer ?? noTracing),
    onAnswered: memory || titleRequests ? onAnswered : undefined,
    logger,
    clock,
    defaultTimezone: config.DEFAULT_TIMEZONE,
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

  // Resumable answers: their event log in the database, heard across replicas through it.
  const storeAbandonedTurn = storeAbandonedTurns({
    runs,
    currentConversation: (userId) => conversationRepository.current(userId),
    model: model.id,
  });
  const tellInterruptedChat =
    telegram &&
    tellInterruptedChats(telegram, logger.child({ component: 'telegram' }), shutdownSignal.signal);
  const detachedRuns = new DetachedRuns({
    store: new RunEventRepository(db, { notify: database.engine === 'server' }),
    logger: logger.child({ component: 'runs' }),
    answerMaxMs: config.ANSWER_MAX_SECONDS * 1000,
    leaseMs: (lease ?? RUN_LEASE_SECONDS) * 1000,
    keepMs: config.RUN_EVENTS_KEEP_HOURS * 3_600_000,
    shutdown: shutdownSignal.signal,
    listen:
      database.engine === 'server' && config.DATABASE_URL
        ? { url: config.DATABASE_URL, replyTimeoutMs: config.DB_REPLY_TIMEOUT_MS }
        : undefined,
    onAbandoned: async (run) => {
      try {
        await storeAbandonedTurn(run);
      } finally {
        // The turn's fate aside, a chat waiting on the answer learns that none is coming.
        await tellInterruptedChat?.(run);
      }
    },
    onUntold:
      telegram &&
      tellUntoldAnswers(
        telegram,
        logger.child({ component: 'telegram' }),
        shutdownSignal.signal,
        Math.min(15_000, ((lease ?? RUN_LEASE_SECONDS) * 1000) / 2),
      ),
  });
  await detachedRuns.start();

  const accountRepository = new AccountRepository(db);
  const limitDefaults = defaultLimits(config);
  const limits = new UsageLimits({
    usage: new UsageRepository(db),
    accounts: accountRepository,
    defaults: limitDefaults,
    applyToAdmin: config.LIMITS_APPLY_TO_ADMIN,
    defaultTimezone: config.DEFAULT_TIMEZONE,
    now: () => clock.now().getTime(),
  });
  const userData = new UserDataRepository(db, documentRepository);
  const accounts = new AccountService({
    accounts: accountRepository,
    userData,
    defaults: limitDefaults,
    logger: logger.child({ component: 'accounts' }),
    onUserChanged: (userId) => limits.forget(userId),
    onLimitsRead: (userId, overrides) => limits.remember(userId, overrides),
    now: () => clock.now().getTime(),
  });

  // Automations: prompts the user's assistant answers on a schedule, on the reminders' clock
  // and tick, delivered like the Telegram door's answers. Off (AUTOMATIONS_PER_USER=0): no
  // kind, so no worker polls for it.
  if (config.AUTOMATIONS_PER_USER > 0) {
    const automationLogger = logger.child({ component: 'automations' });
    jobs.add(
      automationJob({
        automations: automationRepository,
        run: {
          chats,
          createConversation: (userId, title) => conversations.create(userId, title, false),
          automations: automationRepository,
          admitChat: (principal, userId) => limits.admitChat(principal, userId),
          delivery: telegram && telegramAutomationDelivery(telegram, automationLogger),
          defaultChatId: config.TELEGRAM_DEFAULT_CHAT_ID,
          answerMaxMs: config.ANSWER_MAX_SECONDS * 1000,
        },
        clock,
        logger: automationLogger,
        // Not JOB_LEASE_SECONDS: a run may take as long as a chat, and its claim must outlast it.
        policy: {
          ...automationPolicy(config.ANSWER_MAX_SECONDS * 1000),
          intervalMs: config.REMINDER_INTERVAL_SECONDS * 1000,
        },
      }),
    );
  }

  const ingestion = new IngestionService(
    documents,
    {
      uploadsDir: uploadsDirOf(join(config.DATA_DIR, 'uploads')),
      ocrDir: join(config.DATA_DIR, 'ocr'),
      maxBytes: config.INGEST_MAX_BYTES,
      limits: {
        timeoutMs: config.INGEST_TIMEOUT_MS,
        memoryMb: config.INGEST_MEMORY_MB,
        idleMs: config.INGEST_PROCESS_IDLE_MS,
      },
      concurrency: config.INGEST_CONCURRENCY,
      queueMax: config.INGEST_QUEUE_MAX,
      ocrEnabled: config.OCR_ENABLED,
    },
    logger,
  );
  await ingestion.start();

  const webSessionLifetimeMs = config.WEB_SESSION_HOURS * 3_600_000;
  const webSessions = new WebSessions({
    sessions: new WebSessionRepository(db),
    adminToken: config.API_TOKEN,
    authenticateKey: (key) => accounts.authenticate(key),
    lifetimeMs: webSessionLifetimeMs,
  });
  const feedbackService = new FeedbackService(feedbackRepository, () =>
    jobs.kick('feedback_forward'),
  );
  // Telegram as a door to the assistant: long polling (one replica at a time) or a webhook.
  const telegramDoor = telegram
    ? startTelegram({
        config,
        telegram,
        store: new TelegramRepository(db),
        leases: new LeaseRepository(db),
        chats,
        runs: detachedRuns,
        conversations,
        limits,
        feedback: feedbackService,
        reminders,
        ingestion,
        images,
        clock,
        shutdown: shutdownSignal.signal,
        logger: logger.child({ component: 'telegram' }),
        decideApproval: (userId, approvalId, decision) =>
          mcpRepository.decide(userId, approvalId, decision),
      })
    : undefined;

  const app = await buildServer({
    apiToken: config.API_TOKEN,
    web: {
      sessions: webSessions,
      lifetimeMs: webSessionLifetimeMs,
      files: await loadWebClient(fileURLToPath(new URL('../web/dist', import.meta.url))),
    },
    accounts,
    limits,
    userData,
    failedJobs: new FailedJobRepository(db),
    backups: { dir: backupsDir, copy: database.copyDataDir },
    logger,
    checkDatabase: () => database.check(),
    modelStatus: () => model.status(),
    chats,
    chatSettings: {
      messageMaxChars: config.MESSAGE_MAX_CHARS,
      imageMaxBytes: config.IMAGE_MAX_BYTES,
      images,
      keepAliveMs: config.SSE_KEEPALIVE_MS,
      shutdown: shutdownSignal.signal,
      admit: (principal, userId) => limits.admitChat(principal, userId),
      metrics,
      runs: detachedRuns,
    },
    conversations,
    documents,
    feedback: feedbackService,
    reminders,
    automations,
    ingestion,
    ingestMaxBytes: config.INGEST_MAX_BYTES,
    requestTimeoutMs: config.REQUEST_TIMEOUT_MS,
    trustProxy: config.TRUST_PROXY,
    now: () => clock.now().getTime(),
    profiles,
    graph,
    memory,
    mcp: {
      topK: config.SEARCH_TOP_K,
      timeoutMs: config.TOOL_TIMEOUT_MS,
      allowedOrigins: config.MCP_ALLOWED_ORIGINS ?? [],
    },
    metrics: metrics && {
      metrics,
      route: {
        text: clusterMetricsText(metrics.registry),
        contentType: metrics.registry.contentType,
        token: config.METRICS_TOKEN,
      },
    },
    telegramWebhook: telegramDoor?.webhook,
    mcpServers: {
      repository: mcpRepository,
      connections: mcpConnections,
      cipher: mcpCipher,
      toolLimits: mcpToolLimits,
    },
  });

  if (!config.API_TOKEN && !isLoopbackHost(config.HOST)) {
    // Only with PROTECTED_MODE=false (assertProtected refused it otherwise).
    logger.warn(
      { host: config.HOST },
      'PROTECTED_MODE is off and API_TOKEN is not set: anyone who can reach this address is the administrator',
    );
  }

  // Tests only (the test clock): the reminders and automations sweep as soon as a test moves
  // time, not at their next interval. A kick before the job runner has started is ignored.
  const stopWatchingClock = clock.onMoved?.(() => {
    jobs.kick('reminder_notice');
    jobs.kick('automation_run');
  });

  const { stopping } = stopOnSignals({
    graceMs: config.SHUTDOWN_GRACE_MS,
    logger,
    // Open streams are stopped (their partial answers are stored as interrupted), and any
    // connection left is cut a second later; jobs under way are told to stop (their rows
    // keep the work for the next start).
    endGrace: () => {
      shutdownSignal.abort();
      setTimeout(() => app.server.closeAllConnections(), 1_000).unref();
      // Once the jobs told to stop have had their RETURN_MS (and pg-boss has failed the ones
      // that did not return), whatever still waits on the database is waiting on a server that
      // does not answer (a failover, a partition): the database is closed now, which cuts the
      // connections it cannot close, and every step waiting on one of them fails and returns.
      // Its last stage closes it too (once). The embedded engine has no network to go silent.
      if (database.engine === 'server') {
        setTimeout(() => void database.close(), RETURN_MS + DATABASE_CUT_AFTER_RETURN_MS).unref();
      }
    },
    stages: [
      {
        requests: async () => {
          // A client's keep-alive connection goes idle when its stream ends; closing it then
          // (not at the grace period's end) lets the process exit as soon as the last stream
          // is done.
          const idle = setInterval(() => app.server.closeIdleConnections(), 100);
          idle.unref();
          try {
            await app.close();
          } finally {
            clearInterval(idle);
          }
          // Telegram answers in progress finish (or are stopped with the grace period) first,
          // and so do resumable answers nobody listens to any more.
          await telegramDoor?.stop();
          await detachedRuns.drain();
          ingestion.stop();
        },
        // No job starts from now on (a memory decision queued meanwhile is done after the
        // restart); one under way has the grace period to finish.
        jobs: () => {
          stopWatchingClock?.();
          return jobs.stop({ interrupt: shutdownSignal.signal, graceMs: config.SHUTDOWN_GRACE_MS });
        },
      },
      {
        telegram: () => telegram?.close(),
        model: () => model.dispose?.(),
        // Every stdio server's process group, its children included.
        mcp: () => mcpConnections.closeAll(),
        langsmith: () => langSmith?.flush(),
      },
      { database: () => database.close(), runs: () => detachedRuns.close() },
    ],
    // A cluster worker's channel to the primary would keep it alive; the primary sees it exit.
    finally: () => cluster.worker?.disconnect(),
  });

  await app.listen({ host: config.HOST, port: config.PORT });
  // Work queued before a restart (feedback, memory decisions, chunks without vectors while
  // the embedding model was unavailable or another one) is queued now.
  await jobs.start(database.serializeStartup);
  // Stopped while starting (SIGTERM as the port opened): the stop has ended, or is ending,
  // what started so far; nothing more starts.
  if (stopping.aborted) return;
  telegramDoor?.start();
  if (!telegram) logger.info('reminder notices are off: TELEGRAM_BOT_TOKEN is not set');
  if ((config.TELEGRAM_POLLING || config.TELEGRAM_WEBHOOK_URL) && !telegram) {
    logger.warn('Telegram is configured but TELEGRAM_BOT_TOKEN is not: the bot is off');
  }
  const address = app.server.address();
  logger.info(
    {
      port: typeof address === 'object' && address ? address.port : config.PORT,
      engine: database.engine,
      startupMs: Math.round(performance.now() - startedAt),
    },
    'Parley is listening',
  );
  // A first run starts the embedded model's download now, not at the first chat, and says
  // where to follow it.
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const host = ['0.0.0.0', '::'].includes(config.HOST) ? '127.0.0.1' : config.HOST;
  model.prepare?.(() =>
    logger.info(
      { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/` },
      'the embedded model is downloading in the background: open the URL to follow it',
    ),
  );
}
