/** What `GET /info` answers; the client reads batching limits and compression flags from it. */
export interface ServerInfo {
  version: string;
  license_expiration_time: string | null;
  batch_ingest_config: Record<string, unknown>;
  instance_flags: Record<string, unknown>;
  [key: string]: unknown;
}

/** Overrides merged one level deep, so `{ instance_flags: { zstd_compression_enabled: false } }` keeps the other flags. */
export interface ServerInfoOverrides {
  version?: string;
  license_expiration_time?: string | null;
  batch_ingest_config?: Record<string, unknown>;
  instance_flags?: Record<string, unknown>;
}

/**
 * Shaped like a current LangSmith cloud answer: multipart ingestion on, and both
 * compressed encodings allowed, so the client takes the path it takes in production.
 */
export function serverInfo(overrides: ServerInfoOverrides = {}): ServerInfo {
  return {
    version: '0.12.0',
    license_expiration_time: null,
    ...overrides,
    batch_ingest_config: {
      use_multipart_endpoint: true,
      scale_up_qsize_trigger: 1000,
      scale_up_nthreads_limit: 16,
      scale_down_nempty_trigger: 4,
      size_limit: 100,
      size_limit_bytes: 20_971_520,
      ...overrides.batch_ingest_config,
    },
    instance_flags: {
      generate_ai_query_enabled: true,
      org_creation_disabled: false,
      search_enabled: true,
      show_ttl_ui: true,
      trace_tier_duration_days: { longlived: 400, shortlived: 14 },
      workspace_scope_org_invites: false,
      s3_storage_enabled: true,
      gzip_body_enabled: true,
      zstd_compression_enabled: true,
      ...overrides.instance_flags,
    },
  };
}
