import type { GraphRepository, GraphVersion, TripleRecord } from '../storage/graph-repository.ts';
import { matchKey, termKey } from './term-key.ts';

export interface Triple {
  subject: string;
  relation: string;
  object: string;
}

/** A stored triple with its subject's and object's match keys, computed once per read. */
export interface KnownTriple extends TripleRecord {
  subjectMatch: string;
  objectMatch: string;
}

/** A user's graph as cached: the triples (newest first) and the version they were read at. */
interface CachedGraph {
  version: GraphVersion;
  triples: KnownTriple[];
}

export interface GraphSettings {
  maxTriples: number;
  /** Users whose graphs stay in memory (least recently used are dropped). */
  cacheUsers: number;
}

export class GraphFullError extends Error {
  override readonly name = 'GraphFullError';
}

/**
 * Per-user knowledge graphs (spec rule 5). The table is the truth; memory holds a bounded
 * cache of recently used graphs, each checked against the table's (count, max id) version
 * before use, so a graph changed by another replica is re-read and never served stale.
 */
export class GraphService {
  readonly #repository: GraphRepository;
  readonly #settings: GraphSettings;
  readonly #cache = new Map<string, CachedGraph>();

  constructor(repository: GraphRepository, settings: GraphSettings) {
    this.#repository = repository;
    this.#settings = settings;
  }

  /** Stores a triple once (by its keys); false when it was already known. */
  async add(userId: string, triple: Triple): Promise<boolean> {
    const clean = {
      subject: tidy(triple.subject),
      relation: tidy(triple.relation),
      object: tidy(triple.object),
    };
    const stored = await this.#repository.add(
      userId,
      {
        ...clean,
        subjectKey: termKey(clean.subject),
        relationKey: termKey(clean.relation),
        objectKey: termKey(clean.object),
      },
      this.#settings.maxTriples,
    );
    if (stored.outcome === 'full') {
      throw new GraphFullError(
        `The knowledge graph already holds ${stored.count} relations, its limit; nothing was added.`,
      );
    }
    return stored.outcome === 'added';
  }

  /** Triples where `name` is the subject or the object, tolerant of case, spaces and particles. */
  async about(userId: string, name: string): Promise<KnownTriple[]> {
    const wanted = matchKey(name);
    if (!wanted) return [];
    const triples = await this.list(userId);
    return triples.filter(
      (triple) => triple.subjectMatch === wanted || triple.objectMatch === wanted,
    );
  }

  /** The user's triples, newest first. */
  async list(userId: string): Promise<KnownTriple[]> {
    const { version } = await this.#repository.version(userId);
    const cached = this.#cache.get(userId);
    if (cached && cached.version === version) {
      this.#touch(userId, cached);
      return cached.triples;
    }
    const triples = (await this.#repository.list(userId)).map((triple) => ({
      ...triple,
      subjectMatch: matchKey(triple.subject),
      objectMatch: matchKey(triple.object),
    }));
    // Read after the version: if a write slipped in between, the next read's check catches it.
    this.#touch(userId, { version, triples });
    return triples;
  }

  async clear(userId: string): Promise<number> {
    const deleted = await this.#repository.clear(userId);
    this.#cache.delete(userId);
    return deleted;
  }

  #touch(userId: string, graph: CachedGraph): void {
    this.#cache.delete(userId);
    this.#cache.set(userId, graph);
    while (this.#cache.size > this.#settings.cacheUsers) {
      const oldest = this.#cache.keys().next().value;
      if (oldest === undefined) break;
      this.#cache.delete(oldest);
    }
  }
}

const tidy = (term: string) => term.normalize('NFC').trim().replace(/\s+/g, ' ');
