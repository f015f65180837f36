import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { type BodyEnding, OVERSIZED_BYTES, oversizedAnswers } from '../support/body-endings.ts';
import { ENGINES } from '../support/engines.ts';
import { reply } from '../support/fake-llm-server.ts';
import { startTelegramStack, type TelegramStack } from '../support/telegram-stack.ts';

/**
 * The Bot API's 200 answers that do not arrive whole (test/support/body-endings.ts), on both
 * engines (updates are claimed, documents stored, in the database):
 * - a file download cut after the headers, half way or one byte short, a file shorter than
 *   getFile said (its own length consistent), stalled past TELEGRAM_DOWNLOAD_TIMEOUT_MS, or an
 *   HTML 502: the document is not taken as whole; the user is told, and sending it again works;
 * - getUpdates cut, half JSON, an HTML 502 or stalled past its time limit: the update is not
 *   lost, and is answered once;
 * - the final answer's sendMessage answered 200 and cut, half or stalled past
 *   TELEGRAM_CALL_TIMEOUT_MS (Telegram showed it): shown once, not sent again; a proxy's 502
 *   (it never reached Telegram): sent again, shown once.
 * - a getUpdates answer far larger than 100 updates can be: read up to 16 MiB, not whole;
 *   polling pauses as after a cut answer, and the update that follows is answered once; a
 *   getFile answer likewise: asked again, and the document is added.
 */
describe.each(ENGINES)('Telegram answers that do not end whole, on the %s engine', (engine) => {
  let stack: TelegramStack;
  vi.setConfig({ testTimeout: 120_000 });

  beforeAll(async () => {
    stack = await startTelegramStack(engine, {
      TELEGRAM_POLL_TIMEOUT_SECONDS: '1',
      TELEGRAM_CALL_TIMEOUT_MS: '3000',
      TELEGRAM_DOWNLOAD_TIMEOUT_MS: '3000',
    });
  }, 200_000);
  afterEach(() => {
    stack.telegram.assertNoUnexpected();
    stack.llm.assertNoUnexpected();
  });
  afterAll(async () => {
    const code = await stack?.parley.stop();
    expect(code).toBe(0);
    await stack?.stop();
  });

  const DOWNLOAD_ENDINGS: BodyEnding[] = [
    'cut-after-headers',
    'cut-mid-body',
    'cut-last-byte',
    'truncated-json',
    'stall-mid-body',
    'html-502',
  ];

  it.each(DOWNLOAD_ENDINGS)(
    'a document whose download is %s is not taken as whole, and can be sent again',
    async (ending) => {
      const chatId = 700 + DOWNLOAD_ENDINGS.indexOf(ending);
      const key = await stack.link(`doc-${ending}`, chatId);
      const text = [
        'The first paragraph names the copper kettle by the window.',
        'The last paragraph names the walnut ladder in the barn.',
      ].join('\n\n');
      const file = stack.telegram.addFile(Buffer.from(text), 'txt');
      const say = async () => {
        const from = stack.telegram.sentTo(String(chatId)).length;
        stack.telegram.pushUpdateMessage(chatId, {
          document: {
            file_id: file.fileId,
            file_unique_id: `u-${ending}`,
            file_name: 'notes.txt',
            mime_type: 'text/plain',
            file_size: file.size,
          },
        });
        await stack.telegram.waitFor(
          () => stack.telegram.sentTo(String(chatId)).length > from,
          60_000,
        );
        return stack.telegram.sentTo(String(chatId))[from]?.visible ?? '';
      };
      const documents = async () =>
        (
          (await (await stack.parley.fetch('/documents', { token: key })).json()) as {
            documents: string[];
          }
        ).documents;

      stack.telegram.failMethod('download', { kind: 'ending', ending });
      const told = await say();
      expect(told).not.toMatch(/is in your documents/);
      expect(told).toMatch(/try again/);
      expect(await documents()).not.toContain('notes.txt');

      expect(await say()).toMatch(/^“notes\.txt” is in your documents/);
      expect(await documents()).toContain('notes.txt');
      await stack.parley.settled();
      expect(stack.parley.output()).not.toContain('walnut');
      expect(stack.parley.output()).not.toContain('Bad Gateway');
    },
  );

  // getFile's file_size is optional in the Bot API: without it the download is checked against
  // nothing more than its own length, and a whole file is taken.
  it('adds a document whose getFile answer gives no file_size', async () => {
    const chatId = 760;
    const key = await stack.link('doc-no-size', chatId);
    const file = stack.telegram.addFile(Buffer.from('The pewter jug is on the shelf.'), 'txt', {
      sizeKnown: false,
    });
    const from = stack.telegram.sentTo(String(chatId)).length;
    stack.telegram.pushUpdateMessage(chatId, {
      document: {
        file_id: file.fileId,
        file_unique_id: 'u-no-size',
        file_name: 'jug.txt',
        mime_type: 'text/plain',
      },
    });
    await stack.telegram.waitFor(() => stack.telegram.sentTo(String(chatId)).length > from, 60_000);
    expect(stack.telegram.sentTo(String(chatId))[from]?.visible).toMatch(
      /^“jug\.txt” is in your documents/,
    );
    const listed = (await (await stack.parley.fetch('/documents', { token: key })).json()) as {
      documents: string[];
    };
    expect(listed.documents).toContain('jug.txt');
  });

  const SEND_ENDINGS = ['cut-mid-body', 'truncated-json', 'stall-mid-body', 'html-502'] as const;
  it.each(SEND_ENDINGS)('shows an answer once when sendMessage’s answer is %s', async (ending) => {
    const chatId = 790 + SEND_ENDINGS.indexOf(ending);
    await stack.link(`send-${ending}`, chatId);
    const from = stack.telegram.sentTo(String(chatId)).length;
    stack.llm.enqueue(reply.text(`The ${ending} answer is here.`));
    stack.telegram.failMethod('sendMessage', { kind: 'ending', ending });
    const logged = stack.parley.logs.length;
    stack.telegram.pushMessage(chatId, 'say it');
    await stack.answerAfter(chatId, from, 60_000);
    // Logged once the answer's last send is over, after any send again: a stall is ended at
    // TELEGRAM_CALL_TIMEOUT_MS (3 s here), past which grammY's own 30 s would send it again.
    await stack.parley.waitForLog(
      (line) => line.msg === 'Telegram answer sent' && stack.parley.logs.indexOf(line) >= logged,
      60_000,
    );
    const shown = stack.telegram
      .sentTo(String(chatId))
      .slice(from)
      .filter((m) => m.visible.includes(`The ${ending} answer is here.`));
    expect(shown).toHaveLength(1);
  });

  it('loses no update to getUpdates answers cut, half, a 502 page or stalled, and answers it once', async () => {
    const chatId = 780;
    await stack.link('polled', chatId);
    const from = stack.telegram.sentTo(String(chatId)).length;
    stack.llm.enqueue(reply.text('The kettle is copper.'));
    for (const ending of [
      'cut-after-headers',
      'cut-mid-body',
      'cut-last-byte',
      'truncated-json',
      'html-502',
      'stall-mid-body',
    ] as const) {
      stack.telegram.failMethod('getUpdates', { kind: 'ending', ending });
    }
    // The poll under way may end with nothing: the message is pushed once the first broken
    // answer was read, so the next ones carry it.
    const logged = stack.parley.logs.length;
    const pausedSince = () =>
      stack.parley.logs.slice(logged).filter((line) => line.msg === 'Telegram polling paused');
    await stack.telegram.waitFor(() => pausedSince().length > 0, 30_000);
    const started = Date.now();
    stack.telegram.pushMessage(chatId, 'what is the kettle made of?');
    const answer = await stack.answerAfter(chatId, from, 90_000);
    // Four pauses of 5 s after an error, and one stall ended at the poll's wait + 15 s.
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(answer.map((m) => m.visible).join('')).toContain('The kettle is copper.');
    await stack.parley.settled();
    const sent = stack.telegram.sentTo(String(chatId)).slice(from);
    expect(sent.filter((m) => m.visible.includes('kettle is copper'))).toHaveLength(1);
    expect(
      stack.llm.chats.filter((c) => JSON.stringify(c.body).includes('kettle made')),
    ).toHaveLength(1);
    expect(pausedSince().length).toBe(6);
    for (const line of pausedSince()) expect(line.status).toBeUndefined();
    expect(stack.parley.output()).not.toContain('Bad Gateway');
    expect(stack.parley.output()).not.toContain(stack.telegram.token);
  });

  it('reads a getFile answer over its bound no further, asks again, and adds the document', async () => {
    const chatId = 782;
    const key = await stack.link('getfile-oversized', chatId);
    const file = stack.telegram.addFile(Buffer.from('The brass lantern hangs by the door.'), 'txt');
    const from = stack.telegram.sentTo(String(chatId)).length;
    const answers = oversizedAnswers.length;
    stack.telegram.failMethod('getFile', { kind: 'ending', ending: 'oversized' });
    stack.telegram.pushUpdateMessage(chatId, {
      document: {
        file_id: file.fileId,
        file_unique_id: 'u-getfile-oversized',
        file_name: 'lantern.txt',
        mime_type: 'text/plain',
        file_size: file.size,
      },
    });
    await stack.telegram.waitFor(() => stack.telegram.sentTo(String(chatId)).length > from, 60_000);
    expect(stack.telegram.sentTo(String(chatId))[from]?.visible).toMatch(
      /^“lantern\.txt” is in your documents/,
    );
    const sent = oversizedAnswers[answers];
    await sent?.done;
    expect(sent?.closedEarly).toBe(true);
    expect(sent?.written).toBeLessThan(OVERSIZED_BYTES / 2);
    expect(stack.telegram.callsOf('getFile').length).toBeGreaterThanOrEqual(2);
    const documents = (await (await stack.parley.fetch('/documents', { token: key })).json()) as {
      documents: string[];
    };
    expect(documents.documents).toContain('lantern.txt');
    await stack.parley.settled();
    expect(stack.parley.output()).not.toContain('brass lantern');
  });

  it('reads a getUpdates answer over its bound no further, pauses, and answers the next update once', async () => {
    const chatId = 781;
    await stack.link('polled-oversized', chatId);
    const from = stack.telegram.sentTo(String(chatId)).length;
    stack.llm.enqueue(reply.text('The ladder is walnut.'));
    const answers = oversizedAnswers.length;
    stack.telegram.failMethod('getUpdates', { kind: 'ending', ending: 'oversized' });
    const logged = stack.parley.logs.length;
    const paused = await stack.parley.waitForLog(
      (line) => line.msg === 'Telegram polling paused' && stack.parley.logs.indexOf(line) >= logged,
      30_000,
    );
    expect(JSON.stringify(paused.err)).toContain('upstream_answer_too_large');
    const sent = oversizedAnswers[answers];
    await sent?.done;
    expect(sent?.closedEarly).toBe(true);
    expect(sent?.written).toBeLessThan(OVERSIZED_BYTES / 2);
    stack.telegram.pushMessage(chatId, 'what is the ladder made of?');
    const answer = await stack.answerAfter(chatId, from, 60_000);
    expect(answer.map((m) => m.visible).join('')).toContain('The ladder is walnut.');
    await stack.parley.settled();
    const shown = stack.telegram.sentTo(String(chatId)).slice(from);
    expect(shown.filter((m) => m.visible.includes('ladder is walnut'))).toHaveLength(1);
    expect(stack.parley.output()).not.toContain(stack.telegram.token);
  });
});
