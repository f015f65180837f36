import { randomUUID } from 'node:crypto';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import {
  jsonSchemaTransform,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { AccountService } from '../accounts/account-service.ts';
import type { UsageLimits } from '../accounts/usage-limits.ts';
import type { WebSessions } from '../accounts/web-sessions.ts';
import type { ChatService } from '../assistant/chat-service.ts';
import type { AutomationService } from '../automations/automation-service.ts';
import type { ConversationService } from '../conversations/conversation-service.ts';
import type { DocumentService } from '../documents/document-service.ts';
import type { IngestionService } from '../documents/ingestion-service.ts';
import type { FeedbackService } from '../feedback/feedback-service.ts';
import type { GraphService } from '../graph/graph-service.ts';
import type { ConversationMemory } from '../memory/conversation-memory.ts';
import type { Metrics } from '../metrics/metrics.ts';
import type { ModelStatus } from '../models/model-status.ts';
import type { ProfileService } from '../reminders/profile-service.ts';
import type { ReminderService } from '../reminders/reminder-service.ts';
import type { DatabaseState } from '../storage/database.ts';
import type { UserDataRepository } from '../storage/user-data-repository.ts';
import { APP_VERSION } from '../version.ts';
import type { App } from './app-types.ts';
import { type AuthSettings, installAuth } from './auth.ts';
import { clientErrorHandler } from './client-errors.ts';
import { CredentialThrottle } from './credential-throttle.ts';
import { installErrorHandling } from './error-handler.ts';
import { documentBodyErrors } from './error-responses.ts';
import { answerFrameworkError } from './framework-errors.ts';
import { methodNotAllowed } from './method-not-allowed.ts';
import { registerAccountRoutes } from './routes/account.ts';
import { type FailedJobs, registerAdminRoutes } from './routes/admin.ts';
import { registerAutomationRoutes } from './routes/automations.ts';
import { type Backups, registerBackupRoute } from './routes/backup.ts';
import { type ChatRouteSettings, registerChatRoutes } from './routes/chat.ts';
import { registerConversationSearchRoutes } from './routes/conversation-search.ts';
import { registerConversationRoutes } from './routes/conversations.ts';
import { registerDocumentRoutes } from './routes/documents.ts';
import { registerFeedbackRoutes } from './routes/feedback.ts';
import { registerGraphRoutes } from './routes/graph.ts';
import { registerHealthRoutes } from './routes/health.ts';
import { registerHistoryRoutes } from './routes/history.ts';
import { registerIngestRoutes } from './routes/ingest.ts';
import { type McpDoorSettings, registerMcpRoute } from './routes/mcp.ts';
import { type McpRouteDependencies, registerMcpRoutes } from './routes/mcp-servers.ts';
import { registerMemoryRoutes } from './routes/memories.ts';
import { type MetricsRouteSettings, registerMetricsRoutes } from './routes/metrics.ts';
import { registerOpenAiRoutes } from './routes/openai.ts';
import { registerReminderRoutes } from './routes/reminders.ts';
import { registerResetRoutes } from './routes/reset.ts';
import { registerRunRoutes } from './routes/runs.ts';
import { registerSessionRoutes } from './routes/session.ts';
import {
  registerTelegramWebhookRoute,
  type TelegramWebhookSettings,
} from './routes/telegram-webhook.ts';
import { registerUserRoutes } from './routes/users.ts';
import { SOURCE_MAX_CHARS } from './schemas.ts';
import { cookieAuthentication } from './session-cookie.ts';
import { registerWebClient, type WebClientFiles } from './web-client.ts';

export interface HttpDependencies {
  apiToken: string | undefined;
  accounts: AccountService;
  limits: UsageLimits;
  userData: UserDataRepository;
  /** Background jobs given up for good (GET /admin/jobs). */
  failedJobs: FailedJobs;
  backups: Backups;
  /** Ways in besides the Authorization header (tests); the web client's session is added. */
  authenticateOther?: AuthSettings['authenticateOther'];
  /** The web client's sessions (a cookie made from a key), and how long one lasts. */
  web?: { sessions: WebSessions; lifetimeMs: number; files: WebClientFiles | undefined };
  logger: FastifyBaseLogger;
  /** The database's state for /health. */
  checkDatabase: () => Promise<DatabaseState>;
  /** The chat model's state for /health (the embedded model's first download). */
  modelStatus: () => ModelStatus;
  chats: ChatService;
  chatSettings: ChatRouteSettings;
  conversations: ConversationService;
  documents: DocumentService;
  feedback: FeedbackService;
  ingestion: IngestionService;
  ingestMaxBytes: number;
  /** Longest a client may take to send a whole request (REQUEST_TIMEOUT_MS). */
  requestTimeoutMs: number;
  /** TRUST_PROXY: the proxies whose X-Forwarded-For names the client (unset: none). */
  trustProxy?: number | string[] | undefined;
  /** The service's clock, in ms, for the bearer throttle's window (tests move it). */
  now?: (() => number) | undefined;
  reminders: ReminderService;
  automations: AutomationService;
  profiles: ProfileService;
  graph: GraphService;
  /** Present when CONV_RAG_ENABLED. */
  memory?: ConversationMemory | undefined;
  /** `/mcp`: Parley as an MCP server of each user's own data. */
  mcp: McpDoorSettings;
  /** Present when METRICS_ENABLED: requests are counted and GET /metrics is served. */
  metrics?: { metrics: Metrics; route: MetricsRouteSettings } | undefined;
  /** MCP servers as tools: the administrator's and users' routes (issue 33). */
  mcpServers?: McpRouteDependencies | undefined;
  /** Present when TELEGRAM_WEBHOOK_URL is set: POST /telegram/webhook takes updates. */
  telegramWebhook?: TelegramWebhookSettings | undefined;
}

/** A client-supplied request id is kept when it is short and plain, so logs can be joined. */
const REQUEST_ID = /^[\w.:-]{1,64}$/;

/** A hop count trusts that many proxies nearest the server (Fastify's types take it as a function). */
function trustedProxies(
  setting: number | string[],
): string[] | ((address: string, hop: number) => boolean) {
  return typeof setting === 'number' ? (_address, hop) => hop < setting : setting;
}

/** Builds the HTTP edge: routes, auth, validation, error mapping, OpenAPI. Does not listen. */
export async function buildServer(deps: HttpDependencies): Promise<App> {
  const app = Fastify({
    loggerInstance: deps.logger,
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    routerOptions: { maxParamLength: SOURCE_MAX_CHARS * 3 + 16 }, // room for percent-encoding
    bodyLimit: 1024 * 1024,
    // A request still arriving after this (a stalled upload, a body that never ends) is
    // answered 408 and its connection closed. Node enforces it only while its headers limit
    // is not longer (as Node's own default has it), and checks at an interval (30 s by
    // default) that a short limit shortens.
    requestTimeout: deps.requestTimeoutMs,
    http: {
      headersTimeout: Math.min(60_000, deps.requestTimeoutMs),
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(deps.requestTimeoutMs / 4)),
    },
    clientErrorHandler: clientErrorHandler(deps.logger),
    frameworkErrors: answerFrameworkError,
    // request.ip (the sign-in and bearer throttles' key) is the socket's address unless a proxy is trusted.
    ...(deps.trustProxy !== undefined && { trustProxy: trustedProxies(deps.trustProxy) }),
  }).withTypeProvider<ZodTypeProvider>();

  // Every body is JSON (or multipart for uploads): anything else is a 415, not a string.
  app.removeContentTypeParser('text/plain');
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
    // For every response: no content sniffing, no address sent on in a Referer. The page's
    // own Content-Security-Policy is set where it is served (web-client.ts).
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
  });
  installErrorHandling(app);
  const throttle = new CredentialThrottle(deps.now);
  installAuth(app, {
    throttle,
    adminToken: deps.apiToken,
    authenticateKey: (key) => deps.accounts.authenticate(key),
    authenticateOther:
      deps.authenticateOther ?? (deps.web && cookieAuthentication(deps.web.sessions)),
  });
  const metrics = deps.metrics?.metrics;
  if (metrics) {
    // The route's template, never the URL: user ids and sources stay out of the labels.
    app.addHook('onResponse', async (request, reply) => {
      metrics.httpRequest(
        request.routeOptions.url ?? 'unmatched',
        request.method,
        reply.statusCode,
      );
    });
  }

  // The interactive docs are public, like /openapi.json; the hooks must precede the plugin.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/docs')) route.config = { ...route.config, public: true };
  });
  app.addHook('onRoute', documentBodyErrors);
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Parley',
        description: 'A self-hosted, multi-user conversational assistant.',
        version: APP_VERSION,
      },
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      },
      security: [{ bearer: [] }],
    },
    transform: jsonSchemaTransform,
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    uiConfig: { url: '/openapi.json' },
    uiHooks: {},
  });

  const methods = methodNotAllowed(app);
  methods.track();
  app.get('/openapi.json', { config: { public: true }, schema: { hide: true } }, async () =>
    app.swagger(),
  );
  registerHealthRoutes(app, deps.checkDatabase, deps.modelStatus);
  registerChatRoutes(app, deps.chats, deps.conversations, deps.chatSettings);
  if (deps.chatSettings.runs) {
    registerRunRoutes(app, deps.chatSettings.runs, deps.chatSettings.keepAliveMs);
  }
  await registerOpenAiRoutes(app, deps.chats, deps.chatSettings);
  registerResetRoutes(app, deps.conversations);
  registerDocumentRoutes(app, deps.documents);
  registerFeedbackRoutes(app, deps.feedback);
  registerReminderRoutes(app, deps.reminders);
  registerIngestRoutes(app, deps.ingestion, deps.ingestMaxBytes, deps.limits);
  registerUserRoutes(app, deps.profiles);
  registerAutomationRoutes(app, deps.automations);
  registerGraphRoutes(app, deps.graph);
  registerMemoryRoutes(app, deps.memory);
  registerMcpRoute(
    app,
    {
      documents: deps.documents,
      reminders: deps.reminders,
      graph: deps.graph,
      memory: deps.memory,
    },
    deps.mcp,
  );
  registerAccountRoutes(app, deps.limits, deps.userData);
  registerAdminRoutes(app, deps.accounts, deps.failedJobs);
  registerBackupRoute(app, deps.backups);
  if (deps.mcpServers) registerMcpRoutes(app, deps.mcpServers);
  registerHistoryRoutes(app, deps.conversations);
  registerConversationRoutes(app, deps.conversations);
  registerConversationSearchRoutes(app, deps.conversations);
  if (deps.web) {
    registerSessionRoutes(app, deps.web.sessions, deps.web.lifetimeMs, deps.now);
    registerWebClient(app, deps.web.files);
  }
  if (deps.metrics) registerMetricsRoutes(app, deps.metrics.route, throttle);
  if (deps.telegramWebhook) registerTelegramWebhookRoute(app, deps.telegramWebhook, throttle);
  methods.answer405();

  return app;
}
