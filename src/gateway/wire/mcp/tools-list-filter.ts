/**
 * The answer to a `tools/list` made under a `tools` scope, filtered to the
 * tools the token may call: every JSON-RPC response in it whose `result.tools`
 * is an array keeps only the entries whose `name` the scope allows.
 *
 * Promises: it reads what it must and no more, within LIST_ANSWER_LIMIT. A
 * JSON answer is held until it ends (the tools' names may follow their
 * schemas), then parsed, filtered and sent; an event stream is held one event
 * at a time, each event's data read as one JSON-RPC message and re-sent
 * filtered (its other fields kept), every other event passed on as it was.
 * Past the limit, or unreadable, the answer is never sent unfiltered: the
 * caller gets a JSON-RPC error instead (id null) and the rest is dropped. It
 * runs after the masker, so it sees masked bytes only. Whatever it re-sends is
 * serialised once by JSON.stringify: a repeated key cannot reach the client.
 */
import { toolAllowed } from '../../../catalog/scopes.js';

/** The largest tools/list answer (or one event of it) read to be filtered. GitHub's whole list is about 100 KB. */
export const LIST_ANSWER_LIMIT = 4 * 1024 * 1024;

/** A step of the response relay: bytes in, bytes out (undefined: nothing to send yet). */
export interface ChunkStage {
  push(chunk: Buffer): Buffer | undefined;
  end(): Buffer | undefined;
}

const TOO_LARGE = { jsonrpc: '2.0', id: null, error: { code: -32603, message: `The tools/list answer could not be filtered to this token's tools (over ${LIST_ANSWER_LIMIT} bytes, or not JSON-RPC).` } };
const EVENT_END = /\r?\n\r?\n/;

/** Keeps the allowed entries of every `result.tools` in a message or batch; false when it holds no such list. */
function filterTools(message: unknown, allowed: readonly string[]): boolean {
  if (Array.isArray(message)) return message.map((m) => filterTools(m, allowed)).some(Boolean);
  const result = (message as { result?: { tools?: unknown } } | null)?.result;
  if (!result || typeof result !== 'object' || !Array.isArray(result.tools)) return false;
  result.tools = result.tools.filter((t: unknown) => typeof (t as { name?: unknown })?.name === 'string' && toolAllowed(allowed, (t as { name: string }).name));
  return true;
}

const concat = (a: Buffer | undefined, b: Buffer | undefined): Buffer | undefined => (a && b ? Buffer.concat([a, b]) : a ?? b);

/** A JSON answer: held whole (within the limit), then filtered. */
class JsonAnswer implements ChunkStage {
  private held: Buffer[] = [];
  private size = 0;

  constructor(private readonly allowed: readonly string[]) {}

  push(chunk: Buffer): undefined {
    this.size += chunk.length;
    if (this.size <= LIST_ANSWER_LIMIT) this.held.push(chunk);
    else this.held = [];
    return undefined;
  }

  end(): Buffer | undefined {
    if (this.size === 0) return undefined;
    let message: unknown = TOO_LARGE;
    if (this.size <= LIST_ANSWER_LIMIT) {
      try {
        message = JSON.parse(Buffer.concat(this.held).toString('utf8'));
        filterTools(message, this.allowed);
      } catch {
        message = TOO_LARGE;
      }
    }
    this.held = [];
    return Buffer.from(JSON.stringify(message));
  }
}

/** An event stream: held one event at a time; an event carrying a tools list is re-sent filtered. */
class EventAnswer implements ChunkStage {
  private pending = '';
  private broken = false;

  constructor(private readonly allowed: readonly string[]) {}

  push(chunk: Buffer): Buffer | undefined {
    if (this.broken) return undefined;
    this.pending += chunk.toString('latin1'); // byte for byte; each event is decoded as UTF-8 once whole
    let out = '';
    for (let m = EVENT_END.exec(this.pending); m; m = EVENT_END.exec(this.pending)) {
      out += this.event(this.pending.slice(0, m.index)) + m[0];
      this.pending = this.pending.slice(m.index + m[0].length);
    }
    if (this.pending.length > LIST_ANSWER_LIMIT) {
      this.broken = true;
      this.pending = '';
      out += `data: ${JSON.stringify(TOO_LARGE)}\n\n`;
    }
    return out === '' ? undefined : Buffer.from(out, 'latin1');
  }

  end(): Buffer | undefined {
    const rest = this.broken || this.pending === '' ? '' : this.event(this.pending);
    this.pending = '';
    return rest === '' ? undefined : Buffer.from(rest, 'latin1');
  }

  /** One event's lines (latin1 of its bytes), re-sent with its data filtered when it carries a tools list. */
  private event(raw: string): string {
    const lines = raw.split(/\r?\n/);
    const data = lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(l.startsWith('data: ') ? 6 : 5));
    if (data.length === 0) return raw;
    let message: unknown;
    try {
      message = JSON.parse(Buffer.from(data.join('\n'), 'latin1').toString('utf8'));
    } catch {
      return raw;
    }
    if (!filterTools(message, this.allowed)) return raw;
    const others = lines.filter((l) => !l.startsWith('data:'));
    return [...others, `data: ${Buffer.from(JSON.stringify(message), 'utf8').toString('latin1')}`].join('\n');
  }
}

/** The relay's step for a response: the masker alone, or the masker then the tools/list filter when `allowed` is set. */
export function listFiltered(masker: ChunkStage, allowed: readonly string[] | undefined, eventStream: boolean): ChunkStage {
  if (allowed === undefined) return masker;
  const filter = eventStream ? new EventAnswer(allowed) : new JsonAnswer(allowed);
  return {
    push: (chunk) => {
      const masked = masker.push(chunk);
      return masked && filter.push(masked);
    },
    end: () => {
      const last = masker.end();
      return concat(last && filter.push(last), filter.end());
    },
  };
}
