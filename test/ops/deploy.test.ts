import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { configSchema, parseConfig, workerCount } from '../../src/config.ts';

/**
 * No Docker engine runs on the project's machines, so the container files are checked here
 * for what can be checked without one: their shape, the environment each service gets (parsed
 * by Parley's own configuration), and that the image starts Parley as `npm start` does.
 */

const ROOT = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string };
  deploy?: { replicas?: number };
  environment?: Record<string, string | number | boolean>;
  volumes?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string }> | string[];
  stop_grace_period?: string;
  healthcheck?: { test: string[] };
}

const compose = parse(read('deploy/compose.yaml')) as { services: Record<string, Service> };
const { postgres, parley, proxy } = compose.services as Record<string, Service>;

/** Compose's interpolation: `${VAR}`, `${VAR:-default}`, `${VAR:?error}`. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, kind, rest) => {
    const given = env[name];
    if (given !== undefined && given !== '') return given;
    if (kind === '?') throw new Error(`${name}: ${rest}`);
    return kind === '-' ? rest : '';
  });
}

/** What the operator sets, as in compose.yaml's header. */
const OPERATOR = {
  API_TOKEN: 'op-token',
  POSTGRES_PASSWORD: 'pg-secret',
  LLM_BASE_URL: 'http://llm.internal:11434/v1',
};

const parleyEnvironment = (env: Record<string, string>) =>
  Object.fromEntries(
    Object.entries(parley?.environment ?? {}).map(([name, value]) => [
      name,
      interpolate(String(value), env),
    ]),
  );

describe('deploy/compose.yaml', () => {
  it('runs at least two replicas of Parley, several workers each, on PostgreSQL with pgvector', () => {
    expect(parley?.deploy?.replicas).toBeGreaterThanOrEqual(2);
    expect(parley?.build).toEqual({ context: '..', dockerfile: 'Dockerfile' });
    expect(existsSync(new URL('Dockerfile', ROOT))).toBe(true);
    expect(postgres?.image).toMatch(/^pgvector\/pgvector:pg\d+$/);
    expect(postgres?.healthcheck?.test.join(' ')).toContain('pg_isready');
    expect(parley?.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    // Only the load balancer is published; replicas are reached through it.
    expect(parley?.ports).toBeUndefined();
    expect(proxy?.ports).toHaveLength(1);
  });

  it("gives each replica an environment Parley's own configuration accepts", () => {
    for (const name of Object.keys(parley?.environment ?? {})) {
      expect(Object.keys(configSchema.shape)).toContain(name);
    }
    const env = parleyEnvironment(OPERATOR);
    const config = parseConfig(env);
    expect(new URL(config.DATABASE_URL as string).host).toBe('postgres:5432');
    expect(new URL(config.DATABASE_URL as string).password).toBe('pg-secret');
    expect(workerCount(config, 8)).toBe(2);
    expect(config).toMatchObject({ API_TOKEN: 'op-token', METRICS_ENABLED: true });
    expect(config.METRICS_TOKEN).toBeUndefined();
    expect(parseConfig(parleyEnvironment({ ...OPERATOR, PARLEY_WORKERS: 'auto' }))).toMatchObject({
      PARLEY_WORKERS: 'auto',
    });
  });

  it('refuses to start without the settings an operator must choose', () => {
    for (const name of Object.keys(OPERATOR)) {
      const { [name as keyof typeof OPERATOR]: _, ...rest } = OPERATOR;
      // Compose interpolates the whole file before it starts anything.
      expect(() => interpolate(read('deploy/compose.yaml'), rest)).toThrow(name);
    }
  });

  it('gives streams longer to finish than Parley takes to drain', () => {
    const grace = Number(parleyEnvironment(OPERATOR).SHUTDOWN_GRACE_MS);
    expect(Number.parseInt(parley?.stop_grace_period ?? '10s', 10) * 1000).toBeGreaterThan(grace);
  });

  it('names images without a registry host', () => {
    for (const service of Object.values(compose.services)) {
      if (!service.image) continue;
      const first = service.image.split('/')[0] as string;
      if (service.image.includes('/')) expect(first).not.toMatch(/[.:]|^localhost$/);
    }
  });

  it('puts a load balancer in front that does not buffer server-sent events', () => {
    const mount = proxy?.volumes?.find((volume) => volume.startsWith('./nginx.conf:'));
    expect(mount).toBe('./nginx.conf:/etc/nginx/conf.d/default.conf:ro');
    const nginx = read('deploy/nginx.conf');
    expect(nginx).toMatch(/^\s*proxy_buffering off;/m);
    expect(nginx).toMatch(/^\s*proxy_pass \$parley;/m);
    expect(nginx).toContain('set $parley http://parley:8000;');
    expect(nginx).toMatch(/^\s*proxy_read_timeout 1h;/m);
  });
});

describe('Dockerfile', () => {
  const dockerfile = read('Dockerfile');
  const instructions = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .filter((line) => /^[A-Z]+ /.test(line));
  const instruction = (name: string) =>
    instructions
      .filter((line) => line.startsWith(`${name} `))
      .map((line) => line.slice(name.length + 1));

  it("starts Parley with npm start's memory settings, directly (Node handles SIGTERM)", () => {
    const start = (JSON.parse(read('package.json')) as { scripts: { start: string } }).scripts
      .start;
    const words = start.split(/\s+/);
    const assignments = words.filter((word) => /^[A-Z_]+=/.test(word));
    const command = words.slice(assignments.length);
    expect(JSON.parse(instruction('CMD')[0] as string)).toEqual(command);
    const env = instruction('ENV').join(' ');
    for (const assignment of assignments) expect(env).toContain(assignment);
    expect(env).toContain('HOST=0.0.0.0');
  });

  it('installs production dependencies only, runs as a user, and checks /health', () => {
    expect(instruction('RUN').join(' ')).toContain('npm ci --omit=dev');
    expect(instruction('USER')).toEqual(['node']);
    const health = instruction('HEALTHCHECK')[0] as string;
    expect(health).toContain('/health');
    expect(health).toMatch(/--start-period=\d+s/);
  });
});
