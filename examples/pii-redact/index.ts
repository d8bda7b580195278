/**
 * pii-redact: a Keyward middleware plugin that masks e-mail addresses and payment card numbers in request and
 * response bodies (every character of one becomes `*`, so lengths stay) with the streaming body hooks, and refuses
 * a request whose body matches a configured pattern with 400 `content_refused`.
 *
 * It promises: the output does not depend on how the body was cut into pieces. Text is held back only from the
 * last character that can never be part of an address or a card number (anything but letters, digits, `._%+-@`
 * and the space), so an address or a number that straddles two pieces is masked whole; a run of such characters
 * longer than HOLD is given out but for its last TAIL bytes (a body has them rarely: prose has punctuation, JSON
 * has quotes). What it holds stays within its `maxBuffer`. Bytes are read one to a character (latin1), so UTF-8
 * text passes unchanged: the patterns are ASCII.
 *
 * Erasable TypeScript only (Node runs it by stripping the types, no build step).
 */

/** This plugin's settings: its section of KEYWARD_PLUGIN_CONFIG, or PII_REDACT_REFUSE (one pattern) in the environment. */
interface Settings {
  /** Regular expressions (JavaScript syntax, case-insensitive): a request body matching one is refused. */
  refuse: string[];
  emails: boolean;
  cards: boolean;
}

/** What this file uses of the host Keyward hands to `create` (the SDK's Host has more). */
interface Host {
  GatewayError: new (status: number, type: string, code: string, message: string) => Error;
}

/** What this file reads of the request view. */
interface View {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

type Piece = Uint8Array | null;

/** The part of TypeBox's `Type` the settings' schema is built with (Keyward hands it to `configSchema`). */
interface TypeBuilder {
  Object(properties: Record<string, unknown>): unknown;
  Array(items: unknown): unknown;
  String(): unknown;
  Boolean(): unknown;
  Optional(schema: unknown): unknown;
}

/** A run of pattern characters longer than this is given out (but for its last TAIL bytes) rather than held. */
export const HOLD = 16 * 1024;
const TAIL = 512;
/** How much earlier text a refusal pattern may span back into. */
const REFUSE_SPAN = 256;

const EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
/**
 * 13 to 19 digits, single spaces or dashes between them, standing alone (no digit next to it but across a
 * separator, which would make it part of a longer number), and not a JSON number (after `:`, `,` or `[`).
 */
const CARD = /(?<![0-9][ -]?|[:,[] *)[0-9](?:[ -]?[0-9]){12,18}(?![ -]?[0-9])/g;
/** The last character that no pattern can contain: text up to it can be given out. */
const LAST_SEPARATOR = /[^A-Za-z0-9._%+\-@ ][A-Za-z0-9._%+\-@ ]*$/;

/** The Luhn checksum every payment card number passes. */
function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

const stars = (s: string): string => '*'.repeat(s.length);

/** `text` with the addresses and card numbers found masked; `before`: the character before it (a pattern's context). */
export function redact(text: string, before: string, settings: Pick<Settings, 'emails' | 'cards'>): string {
  let out = before + text;
  if (settings.emails) out = out.replace(EMAIL, stars);
  if (settings.cards) out = out.replace(CARD, (m) => (luhn(m.replace(/[ -]/g, '')) ? stars(m) : m));
  return out.slice(before.length);
}

/** One body's state, per direction: what is held, the last character given out, the text a refusal may span. */
interface Stream {
  carry: string;
  before: string;
  seen: string;
}

const fresh = (): Stream => ({ carry: '', before: '', seen: '' });
const EMPTY = new Uint8Array(0);
const bytes = (latin1: string): Uint8Array => (latin1 === '' ? EMPTY : Buffer.from(latin1, 'latin1'));

/**
 * A body's hook: each piece redacted as far as it safely can, the rest held (an empty answer while all is held);
 * `refuse` checked over piece edges. At the end (`null`) the rest goes out and the stream starts afresh (a realtime
 * session's next message is a body of its own).
 */
export function redactor(settings: Settings, refusal: (() => Error) | undefined): (piece: Piece, stream: Stream) => Uint8Array {
  const patterns = settings.refuse.map((p) => new RegExp(p, 'i'));
  return (piece, stream) => {
    if (piece === null) {
      const rest = stream.carry === '' ? '' : redact(stream.carry, stream.before, settings);
      Object.assign(stream, fresh());
      return bytes(rest);
    }
    const added = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength).toString('latin1');
    if (refusal && patterns.length > 0) {
      const window = stream.seen + added;
      if (patterns.some((p) => p.test(window))) throw refusal();
      stream.seen = window.slice(-REFUSE_SPAN);
    }
    const text = stream.carry + added;
    const separator = LAST_SEPARATOR.exec(text);
    let cut = separator ? separator.index + 1 : 0;
    if (text.length - cut > HOLD) cut = text.length - TAIL;
    stream.carry = text.slice(cut);
    if (cut === 0) return EMPTY;
    const out = redact(text.slice(0, cut), stream.before, settings);
    stream.before = text.charAt(cut - 1);
    return bytes(out);
  };
}

const textual = (view: View): boolean => {
  const type = String(view.headers['content-type'] ?? '').toLowerCase();
  // A request body of audio, images or a multipart upload is not text: left as it is.
  return type === '' || type.includes('json') || type.startsWith('text/');
};

export default {
  apiVersion: 1,
  name: 'pii-redact',
  priority: 450,
  /** What a body's hook holds back at most: one run of pattern characters (the masking keeps lengths). */
  maxBuffer: HOLD,
  configSchema: (type: TypeBuilder) => type.Object({
    refuse: type.Optional(type.Array(type.String())),
    emails: type.Optional(type.Boolean()),
    cards: type.Optional(type.Boolean()),
  }),
  create(host: Host, options: Partial<Settings>) {
    const fromEnv = process.env.PII_REDACT_REFUSE;
    const settings: Settings = {
      refuse: [...(options.refuse ?? []), ...(fromEnv ? [fromEnv] : [])],
      emails: options.emails ?? true,
      cards: options.cards ?? true,
    };
    // A pattern that does not compile stops start-up, naming it.
    for (const p of settings.refuse) new RegExp(p, 'i');
    const refused = () => new host.GatewayError(400, 'invalid_request', 'content_refused', 'The request body holds content this gateway refuses.');
    const onRequest = redactor(settings, refused);
    const onResponse = redactor(settings, undefined);
    // Per request (the view is one object per request) and per direction; gone with the request.
    const requests = new WeakMap<object, Stream>();
    const responses = new WeakMap<object, Stream>();
    const streamOf = (map: WeakMap<object, Stream>, view: View): Stream => {
      let stream = map.get(view);
      if (!stream) map.set(view, (stream = fresh()));
      return stream;
    };
    return {
      requestBody(piece: Piece, view: View): Uint8Array | undefined {
        if (!textual(view)) return undefined;
        return onRequest(piece, streamOf(requests, view));
      },
      responseBody(piece: Piece, view: View): Uint8Array {
        return onResponse(piece, streamOf(responses, view));
      },
    };
  },
};
