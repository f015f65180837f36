import type { ChatErrorCode } from '../assistant/chat-events.ts';

/** What the bot says, in English and Korean (for Telegram clients set to Korean). */
export type Language = 'en' | 'ko';

export const languageOf = (code: string | undefined): Language =>
  code?.toLowerCase().startsWith('ko') ? 'ko' : 'en';

const TEXTS = {
  en: {
    linkHint:
      'This chat is not linked to a Parley user. Get a link code from Parley (POST /users/{user_id}/telegram-link or the web client) and send it here as /start <code>.',
    startWithoutCode: 'Send the link code you got from Parley: /start <code>',
    codeUnknown: 'This link code is unknown or has expired. Ask Parley for a new one.',
    linked:
      'Linked. Your reminder notices will come to this chat, and you can talk to your assistant here. /help lists the commands.',
    stopped:
      'Unlinked: this chat no longer talks to your assistant or receives reminders. Link it again with a new code.',
    notLinked: 'This chat is not linked to anyone.',
    reset:
      'Started a new conversation. The earlier ones are kept: /chats lists them to go back to one.',
    help: 'Write to your assistant as in the web client: the same conversations, documents and reminders.\n\n• A photo (with a caption as the question) is looked at by the assistant.\n• A document (PDF, TXT, MD, HTML, DOCX) is added to your private documents.\n• 👍 / 👎 under an answer rates it.\n\n/new — start a new conversation\n/chats — your conversations, to continue one\n/reminders — upcoming reminders\n/help — this text\n/stop — unlink this chat',
    noConversations: 'No conversations yet: just write.',
    conversationsFull: (n: number) =>
      `You keep ${n} conversations, the most this server allows: delete some (in the web client) to start a new one. This chat goes on with the one it continues.`,
    conversationsTitle: 'Your latest conversations (tap one to continue it here):',
    untitled: '(untitled)',
    continuing: (title: string) => `Continuing “${title}”.`,
    conversationGone: 'That conversation is gone.',
    unsupported:
      'This kind of message is not supported yet: send text, a photo or a document (PDF, TXT, MD, HTML, DOCX).',
    photoQuestion: 'What is in this image?',
    editNotAnswered:
      'Edited messages are not answered again: send the corrected message as a new one.',
    noAnswer: 'No answer came. Please try again.',
    answerStopped:
      'Stopped before the end. What was written is above and kept in the conversation.',
    answerStoppedEmpty: 'Stopped before any answer was written.',
    interrupted: (question: string) =>
      `The server stopped while writing the answer to “${question}”. What it had written is above and kept in the conversation; send the message again for a whole answer.`,
    interruptedEmpty: (question: string) =>
      `The server stopped before answering “${question}”. Send the message again.`,
    thanks: 'Thanks for the feedback.',
    feedbackGone: 'This answer can no longer be rated.',
    approvalQuestion: (tool: string, server: string, args: string) =>
      `Run the tool ${tool} of ${server} with these arguments?\n${args}`,
    approve: 'Approve',
    deny: 'Deny',
    alwaysAllow: 'Always allow',
    approvalDecided: {
      approve: 'Approved.',
      always: 'Approved, and always allowed from now on.',
      deny: 'Denied: the tool is not run.',
      expired: 'Too late: the tool was not run.',
    },
    approvalGone: 'This question is no longer open.',
    ingesting: 'Reading the document…',
    ingested: (name: string, chunks: number) =>
      `“${name}” is in your documents (${chunks} ${chunks === 1 ? 'passage' : 'passages'}): ask about it.`,
    ingestFailed: (detail: string) => `The document was not added: ${detail}`,
    ingestBusy:
      'The document was not added: Parley is busy reading other documents. Send it again in 30 seconds.',
    encrypted:
      'The PDF is protected by a password. Upload it with its password in the web client (or POST /ingest with "password").',
    tooBig: (mb: number) => `The file is too large: at most ${mb} MB.`,
    tooLong: (chars: number) =>
      `Your message is too long: at most ${chars} characters. Send a shorter one.`,
    imagesOff: 'Images cannot be analysed here: image understanding is not configured.',
    noReminders: 'No upcoming reminders.',
    remindersTitle: 'Upcoming reminders:',
    cancelled: 'Reminder cancelled.',
    cancelGone: 'That reminder was already gone.',
    overLimit: (reason: string, when: string) => `⏳ ${reason} You can try again ${when}.`,
    limitReason: {
      chats_per_minute: (n: number) => `Too many chats: the limit is ${n} a minute.`,
      tokens_per_day: (n: number) =>
        `Today's limit of ${n} model tokens is used up; it resets at midnight in your timezone.`,
      ingest_mb_per_day: (n: number) =>
        `This upload would pass today's limit of ${n} MB; it resets at midnight in your timezone.`,
      storage_mb: (n: number) =>
        `Your conversations and documents take your ${n} MB: delete some first.`,
    },
    busy: 'Something went wrong on our side; please try again in a moment.',
    modelDownloading: (percent: number) =>
      `The assistant's model is still downloading (${percent} %). Please try again when it is done; the web client shows its progress.`,
  },
  ko: {
    linkHint:
      '이 채팅은 Parley 사용자와 연결되어 있지 않습니다. Parley에서 연결 코드를 받아(POST /users/{user_id}/telegram-link 또는 웹 클라이언트) 여기에 /start <코드> 로 보내 주세요.',
    startWithoutCode: 'Parley에서 받은 연결 코드와 함께 보내 주세요: /start <코드>',
    codeUnknown: '이 연결 코드는 없거나 만료되었습니다. Parley에서 새 코드를 받아 주세요.',
    linked:
      '연결되었습니다. 이제 이 채팅으로 리마인더 알림을 보내 드리고, 여기에서 어시스턴트와 대화할 수 있습니다. /help 로 명령을 볼 수 있습니다.',
    stopped:
      '연결을 끊었습니다. 이 채팅은 더 이상 어시스턴트와 대화하거나 알림을 받지 않습니다. 새 코드로 다시 연결할 수 있습니다.',
    notLinked: '이 채팅은 누구와도 연결되어 있지 않습니다.',
    reset:
      '새 대화를 시작했습니다. 이전 대화는 남아 있습니다. /chats 로 목록을 보고 돌아갈 수 있습니다.',
    help: '웹 클라이언트에서처럼 어시스턴트에게 쓰세요. 같은 대화, 문서, 리마인더입니다.\n\n• 사진(캡션이 질문)을 보내면 어시스턴트가 봅니다.\n• 문서(PDF, TXT, MD, HTML, DOCX)는 내 비공개 문서에 추가됩니다.\n• 답 아래 👍 / 👎 로 평가할 수 있습니다.\n\n/new — 새 대화 시작\n/chats — 내 대화 목록, 이어 가기\n/reminders — 다가오는 리마인더\n/help — 이 도움말\n/stop — 이 채팅 연결 끊기',
    noConversations: '아직 대화가 없습니다. 그냥 메시지를 보내세요.',
    conversationsFull: (n: number) =>
      `대화가 ${n}개로 이 서버의 최대치입니다. 새 대화를 시작하려면 (웹 클라이언트에서) 몇 개를 지우세요. 이 채팅은 지금 대화를 이어 갑니다.`,
    conversationsTitle: '최근 대화입니다(누르면 여기에서 이어 갑니다):',
    untitled: '(제목 없음)',
    continuing: (title: string) => `“${title}” 대화를 이어 갑니다.`,
    conversationGone: '이미 없는 대화입니다.',
    unsupported:
      '이 종류의 메시지는 아직 지원하지 않습니다. 텍스트, 사진 또는 문서(PDF, TXT, MD, HTML, DOCX)를 보내 주세요.',
    photoQuestion: '이 이미지에 무엇이 있나요?',
    editNotAnswered: '수정한 메시지에는 다시 답하지 않습니다. 고친 내용을 새 메시지로 보내 주세요.',
    noAnswer: '답을 받지 못했습니다. 다시 시도해 주세요.',
    answerStopped: '끝나기 전에 멈췄습니다. 위는 그때까지 쓴 내용이며 대화에 남아 있습니다.',
    answerStoppedEmpty: '답을 쓰기 전에 멈췄습니다.',
    interrupted: (question: string) =>
      `“${question}”에 대한 답을 쓰는 중에 서버가 멈췄습니다. 위는 그때까지 쓴 내용이며 대화에 남아 있습니다. 온전한 답을 받으려면 메시지를 다시 보내 주세요.`,
    interruptedEmpty: (question: string) =>
      `“${question}”에 답하기 전에 서버가 멈췄습니다. 메시지를 다시 보내 주세요.`,
    thanks: '평가해 주셔서 감사합니다.',
    feedbackGone: '이 답은 더 이상 평가할 수 없습니다.',
    approvalQuestion: (tool: string, server: string, args: string) =>
      `${server}의 도구 ${tool}을(를) 이 인자로 실행할까요?\n${args}`,
    approve: '승인',
    deny: '거부',
    alwaysAllow: '항상 허용',
    approvalDecided: {
      approve: '승인했습니다.',
      always: '승인했고, 앞으로 항상 허용합니다.',
      deny: '거부했습니다: 도구를 실행하지 않습니다.',
      expired: '너무 늦었습니다: 도구를 실행하지 않았습니다.',
    },
    approvalGone: '이 질문은 더 이상 열려 있지 않습니다.',
    ingesting: '문서를 읽는 중…',
    ingested: (name: string, chunks: number) =>
      `“${name}” 문서를 추가했습니다(${chunks}개 구절). 이제 물어보세요.`,
    ingestFailed: (detail: string) => `문서를 추가하지 못했습니다: ${detail}`,
    ingestBusy:
      '문서를 추가하지 못했습니다. 지금 다른 문서들을 읽느라 바쁩니다. 잠시 후 다시 보내 주세요.',
    encrypted:
      '암호로 보호된 PDF입니다. 웹 클라이언트에서 암호와 함께 올려 주세요(또는 POST /ingest 에 "password").',
    tooBig: (mb: number) => `파일이 너무 큽니다. 최대 ${mb} MB입니다.`,
    tooLong: (chars: number) => `메시지가 너무 깁니다. 최대 ${chars}자입니다. 더 짧게 보내 주세요.`,
    imagesOff: '이미지를 분석할 수 없습니다. 이미지 이해 기능이 설정되어 있지 않습니다.',
    noReminders: '다가오는 리마인더가 없습니다.',
    remindersTitle: '다가오는 리마인더:',
    cancelled: '리마인더를 취소했습니다.',
    cancelGone: '이미 없는 리마인더입니다.',
    overLimit: (reason: string, when: string) => `⏳ ${reason} ${when} 다시 시도할 수 있습니다.`,
    limitReason: {
      chats_per_minute: (n: number) => `대화가 너무 많습니다. 1분에 ${n}번까지 가능합니다.`,
      tokens_per_day: (n: number) =>
        `오늘 사용할 수 있는 모델 토큰 ${n}개를 모두 썼습니다. 내 시간대의 자정에 초기화됩니다.`,
      ingest_mb_per_day: (n: number) =>
        `이 파일을 올리면 오늘 한도 ${n} MB를 넘습니다. 내 시간대의 자정에 초기화됩니다.`,
      storage_mb: (n: number) =>
        `대화와 문서가 내 저장 공간 ${n} MB를 채웠습니다. 먼저 일부를 지워 주세요.`,
    },
    busy: '서버에 문제가 생겼습니다. 잠시 후 다시 시도해 주세요.',
    modelDownloading: (percent: number) =>
      `어시스턴트의 모델을 아직 내려받는 중입니다 (${percent} %). 다 받은 뒤에 다시 시도해 주세요. 웹 클라이언트에서 진행 상황을 볼 수 있습니다.`,
  },
} as const;

export const textsFor = (language: Language) => TEXTS[language];

/** "in 12 seconds", "in about 3 minutes", "in about 5 hours" (Korean: "12초 후"…). */
export function inWords(seconds: number, language: Language): string {
  const s = Math.max(1, Math.ceil(seconds));
  if (language === 'ko') {
    if (s < 90) return `${s}초 후`;
    if (s < 90 * 60) return `약 ${Math.round(s / 60)}분 후`;
    return `약 ${Math.round(s / 3600)}시간 후`;
  }
  if (s < 90) return `in ${s} second${s === 1 ? '' : 's'}`;
  if (s < 90 * 60) return `in about ${Math.round(s / 60)} minutes`;
  return `in about ${Math.round(s / 3600)} hours`;
}

/**
 * Why an answer broke off, for a Korean client: the assistant's own messages are English
 * (POST /chat's `__error`, which a client reads by its code). An English client gets those
 * messages as they are, since they can say more (the upstream's status, a setting to fix).
 */
const KOREAN_CHAT_ERRORS: Record<ChatErrorCode, string> = {
  model_not_configured:
    '어시스턴트의 모델이 설정되어 있지 않거나 불러올 수 없습니다. 관리자에게 알려 주세요.',
  model_downloading: '어시스턴트의 모델을 아직 내려받는 중입니다. 다 받은 뒤에 다시 시도해 주세요.',
  model_unreachable: '모델 서버와의 연결이 끊겼거나 모델 서버에 연결할 수 없습니다.',
  model_stopped: '모델 서버가 답을 끝까지 쓰지 않고 멈췄습니다.',
  model_error: '모델 서버가 오류로 답했습니다.',
  model_timeout: '모델이 답하는 데 너무 오래 걸렸습니다.',
  model_bad_response: '모델 서버가 읽을 수 없는 응답을 보냈습니다.',
  database_unavailable: '데이터베이스를 사용할 수 없습니다. 잠시 후 다시 시도해 주세요.',
  busy: '지금 요청이 많아 바쁩니다. 잠시 후 다시 시도해 주세요.',
  shutting_down: '서비스가 다시 시작되는 중입니다. 잠시 후 메시지를 다시 보내 주세요.',
  turn_lost:
    '이 답은 저장되지 않았습니다. 서버가 멈춘 사이 다음 메시지에 먼저 답했습니다. 이 메시지를 다시 보내 주세요.',
  answer_timeout: '답이 이 서버가 허용하는 시간보다 오래 걸려 여기서 멈췄습니다.',
  run_interrupted: '답을 쓰던 서버가 멈췄습니다. 메시지를 다시 보내 주세요.',
  internal_error: '답하는 중에 문제가 생겼습니다.',
};

/** The words under an answer that ended with an error, in the client's language. */
export function chatErrorText(
  language: Language,
  error: { code: ChatErrorCode; message: string; percent?: number | undefined },
): string {
  if (error.code === 'model_downloading') {
    return textsFor(language).modelDownloading(error.percent ?? 0);
  }
  return language === 'ko' ? KOREAN_CHAT_ERRORS[error.code] : error.message;
}
