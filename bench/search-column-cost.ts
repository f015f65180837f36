/**
 * What computing a message's search terms costs the embedded engine per stored turn (a
 * question and an answer, one INSERT), in PGlite in this process, alternating rounds, CPU time
 * of the process: no search column; the generated column of migration 0012 (`gen`); the same
 * function called by the INSERT (`call`); its body inlined in the INSERT (`inline`, unnamed
 * statements, so planned every time); the CJK bigrams computed by the caller and only
 * `to_tsvector` in SQL (`js`, what RunRepository does since migration 0016).
 *
 *   node --liftoff-only bench/search-column-cost.ts
 */
import { PGlite } from '@electric-sql/pglite';

const db = new PGlite();
const CJK = `'[\\u1100-\\u11FF\\u3040-\\u30FF\\u3130-\\u318F\\u3400-\\u4DBF\\u4E00-\\u9FFF\\uAC00-\\uD7A3]+'`;
await db.exec(`CREATE FUNCTION parley_message_text(content jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE jsonb_typeof(content -> 'content')
    WHEN 'string' THEN content ->> 'content'
    WHEN 'array' THEN (SELECT coalesce(string_agg(part ->> 'text', ' '), '')
                         FROM jsonb_array_elements(content -> 'content') AS part
                        WHERE part ->> 'type' = 'text')
    ELSE '' END
$$;
CREATE FUNCTION sv_sql(role text, content jsonb) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN role IN ('user', 'assistant') THEN
    to_tsvector('simple', t) || array_to_tsvector(ARRAY(
      SELECT DISTINCT CASE WHEN length(run[1]) = 1 THEN run[1] ELSE substr(run[1], i, 2) END
        FROM regexp_matches(t, ${CJK}, 'g') AS run,
             generate_series(1, greatest(length(run[1]) - 1, 1)) AS i))
  END
  FROM (SELECT lower(left(parley_message_text(content), 100000)) AS t) AS words
$$;
CREATE TABLE m_none (id bigserial primary key, role text, content jsonb);
CREATE TABLE m_gen (id bigserial primary key, role text, content jsonb, search tsvector GENERATED ALWAYS AS (sv_sql(role, content)) STORED);
CREATE TABLE m_call (id bigserial primary key, role text, content jsonb, search tsvector);
CREATE TABLE m_inline (id bigserial primary key, role text, content jsonb, search tsvector);
CREATE TABLE m_js (id bigserial primary key, role text, content jsonb, search tsvector);
`);
const rows = (q: string, a: string) =>
  JSON.stringify([
    { role: 'user', content: { role: 'user', content: q } },
    { role: 'assistant', content: { role: 'assistant', content: a } },
  ]);
const SRC = `FROM json_to_recordset($1::json) AS m(role text, content jsonb)`;
const stmts: Record<string, string> = {
  none: `INSERT INTO m_none (role, content) SELECT role, content ${SRC}`,
  gen: `INSERT INTO m_gen (role, content) SELECT role, content ${SRC}`,
  call: `INSERT INTO m_call (role, content, search) SELECT role, content, sv_sql(role, content) ${SRC}`,
  inline: `INSERT INTO m_inline (role, content, search)
    SELECT m.role, m.content, CASE WHEN m.role IN ('user', 'assistant') THEN
      to_tsvector('simple', w.t) || CASE WHEN w.t ~ ${CJK} THEN array_to_tsvector(ARRAY(
        SELECT DISTINCT CASE WHEN length(run[1]) = 1 THEN run[1] ELSE substr(run[1], i, 2) END
          FROM regexp_matches(w.t, ${CJK}, 'g') AS run,
               generate_series(1, greatest(length(run[1]) - 1, 1)) AS i)) ELSE ''::tsvector END END
    ${SRC}, LATERAL (SELECT lower(left(CASE jsonb_typeof(m.content -> 'content')
      WHEN 'string' THEN m.content ->> 'content'
      WHEN 'array' THEN (SELECT coalesce(string_agg(part ->> 'text', ' '), '')
                           FROM jsonb_array_elements(m.content -> 'content') AS part
                          WHERE part ->> 'type' = 'text')
      ELSE '' END, 100000)) AS t) AS w`,
  js: `INSERT INTO m_js (role, content, search) SELECT role, content, to_tsvector('simple', words) || array_to_tsvector(bigrams)
     FROM json_to_recordset($1::json) AS m(role text, content jsonb, words text, bigrams text[])`,
};
const variants = Object.keys(stmts);
for (const lang of ['English', 'Korean']) {
  const q =
    lang === 'English'
      ? 'What did the lease say about the deposit, and when is it due back?'
      : '계약서를 확인했나요? 보증금은 언제 돌려받나요?';
  const a =
    lang === 'English'
      ? 'The lease says the deposit is returned within thirty days after the keys are handed back.'
      : '계약서에 따르면 보증금은 열쇠를 돌려준 뒤 삼십 일 안에 반환됩니다.';
  const plain = rows(q, a);
  const withJs = JSON.stringify(
    JSON.parse(plain).map((r: { content: { content: string } }) => ({
      ...r,
      words: r.content.content.toLowerCase(),
      bigrams: [],
    })),
  );
  const res: Record<string, number[]> = {};
  const of = (v: string) => {
    res[v] ??= [];
    return res[v];
  };
  for (let r = 0; r < 20; r++) {
    for (const v of r % 2 ? [...variants].reverse() : variants) {
      const before = process.cpuUsage();
      for (let i = 0; i < 150; i++)
        await db.query(stmts[v] as string, [v === 'js' ? withJs : plain]);
      const u = process.cpuUsage(before);
      of(v).push((u.user + u.system) / 1000 / 150);
    }
  }
  for (const v of variants) {
    const s = [...of(v)].sort((x, y) => x - y);
    console.log(
      lang,
      v.padEnd(7),
      'median ms/statement',
      s[10]?.toFixed(3),
      'min',
      s[0]?.toFixed(3),
    );
  }
}
const check = await db.query(
  `SELECT (SELECT array_agg(search::text ORDER BY id) FROM m_gen) = (SELECT array_agg(search::text ORDER BY id) FROM m_inline) AS same`,
);
console.log('inline equals generated:', check.rows);
