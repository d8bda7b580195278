/**
 * A fake Amazon Bedrock Runtime on 127.0.0.1:0 that refuses rather than trusts.
 * Every request must carry either `Authorization: Bearer <a Bedrock API key it
 * knows>` or a SigV4 signature it verifies on its own: the access key's secret
 * looked up, the body hash recomputed from the bytes received (never taken from
 * `x-amz-content-sha256`), the date and scope checked, and the signature
 * recomputed with the independent `aws4` package over the signed headers and the
 * path exactly as received. A bad one gets 403 with `x-amzn-errortype`, as AWS
 * answers. It speaks Converse (JSON), ConverseStream (binary event-stream frames
 * from @smithy/core's codec, written one at a time so text arrives in pieces),
 * InvokeModel (Anthropic-native JSON), InvokeModelWithResponseStream (`chunk`
 * frames of base64 Anthropic events ending in `amazon-bedrock-invocationMetrics`)
 * and CountTokens. `echo` makes it put the secrets it knows into its answer, to
 * test the gateway's masking.
 */
import { createHash } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import aws4 from 'aws4';
import { EventStreamCodec } from '@smithy/core/event-streams';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { sleep } from '../wait.js';

export interface BedrockReceived {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** How it authenticated: 'bearer', 'sigv4', or the refusal's reason. */
  auth: string;
}

export interface AwsKey {
  secretAccessKey: string;
  sessionToken?: string;
}

export interface FakeBedrock {
  url: string;
  received: BedrockReceived[];
  /** Access key id → its secret (and session token). */
  keys: Map<string, AwsKey>;
  /** Bedrock API keys it accepts as Bearer. */
  apiKeys: Set<string>;
  /** Put every secret it knows into the response (headers and body). */
  echo: boolean;
  /** A region (as the verified signature's scope names it) → the status its requests get after verification (a region down). */
  failRegions: Map<string, number>;
  close(): Promise<void>;
}

export const USAGE = { inputTokens: 12, outputTokens: 3 };
export const PIECES = ['Hel', 'lo, ', 'world'];

const codec = new EventStreamCodec(toUtf8, fromUtf8);

export function frame(eventType: string, payload: unknown): Uint8Array {
  return codec.encode({
    headers: {
      ':event-type': { type: 'string', value: eventType },
      ':message-type': { type: 'string', value: 'event' },
      ':content-type': { type: 'string', value: 'application/json' },
    },
    body: fromUtf8(JSON.stringify(payload)),
  });
}

/** Checks a SigV4 request against the stored keys; the reason it fails, or undefined. */
function verifySigV4(req: IncomingMessage, body: Buffer, keys: Map<string, AwsKey>): string | undefined {
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/.exec(String(req.headers.authorization));
  if (!m) return 'malformed authorization';
  const [, accessKeyId, date, region, service, signedList, signature] = m as unknown as string[];
  const key = keys.get(accessKeyId!);
  if (!key) return 'unknown access key';
  if (req.headers['x-amz-content-sha256'] !== createHash('sha256').update(body).digest('hex')) return 'body hash mismatch';
  if (!String(req.headers['x-amz-date']).startsWith(date!)) return 'date mismatch';
  const signed = signedList!.split(';');
  if (!signed.includes('host') || !signed.includes('x-amz-date')) return 'host and x-amz-date must be signed';
  if (key.sessionToken !== undefined && req.headers['x-amz-security-token'] !== key.sessionToken) return 'session token mismatch';
  const headers: Record<string, string> = {};
  for (const h of signed) headers[h] = String(req.headers[h] ?? '');
  const again = aws4.sign({ method: req.method, host: req.headers.host, path: req.url, service, region, headers, body },
    { accessKeyId, secretAccessKey: key.secretAccessKey, ...(key.sessionToken !== undefined ? { sessionToken: key.sessionToken } : {}) });
  const expected = /Signature=([0-9a-f]{64})/.exec(String((again.headers as Record<string, string>).Authorization))?.[1];
  return expected === signature ? undefined : 'signature mismatch';
}

function refuse(res: ServerResponse, type: string, message: string): void {
  const text = JSON.stringify({ message });
  res.writeHead(403, { 'content-type': 'application/json', 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.coral.service/`, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function answer(fake: FakeBedrock, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const secrets = [...fake.apiKeys, ...[...fake.keys.values()].flatMap((k) => [k.secretAccessKey, k.sessionToken ?? ''])].filter(Boolean).join(' ');
  const echo: Record<string, string> = fake.echo ? { 'x-echo-secrets': secrets } : {};
  const op = /\/model\/[^/]+\/([a-z-]+)$/.exec(req.url ?? '')?.[1];
  const json = (body: unknown) => {
    const text = JSON.stringify(fake.echo ? { ...(body as object), echoed: secrets } : body);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...echo });
    res.end(text);
  };
  const stream = async (frames: Uint8Array[]) => {
    res.writeHead(200, { 'content-type': 'application/vnd.amazon.eventstream', ...echo });
    for (const f of frames) {
      res.write(f);
      await sleep(15);
    }
    res.end();
  };
  const b64 = (event: unknown) => ({ bytes: Buffer.from(JSON.stringify(event)).toString('base64') });
  switch (op) {
    case 'converse':
      return json({ output: { message: { role: 'assistant', content: [{ text: PIECES.join('') }] } }, stopReason: 'end_turn', usage: { ...USAGE, totalTokens: 15 }, metrics: { latencyMs: 42 } });
    case 'converse-stream':
      return stream([
        frame('messageStart', { p: 'abcd', role: 'assistant' }),
        ...PIECES.map((text) => frame('contentBlockDelta', { contentBlockIndex: 0, delta: { text } })),
        frame('contentBlockStop', { contentBlockIndex: 0 }),
        frame('messageStop', { stopReason: 'end_turn' }),
        frame('metadata', { usage: { ...USAGE, totalTokens: 15 }, metrics: { latencyMs: 42 }, ...(fake.echo ? { echoed: secrets } : {}) }),
      ]);
    case 'invoke':
      return json({ id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', content: [{ type: 'text', text: PIECES.join('') }], stop_reason: 'end_turn', usage: { input_tokens: USAGE.inputTokens, output_tokens: USAGE.outputTokens } });
    case 'invoke-with-response-stream':
      return stream([
        frame('chunk', b64({ type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude', content: [], stop_reason: null, usage: { input_tokens: USAGE.inputTokens, output_tokens: 1 } } })),
        frame('chunk', b64({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })),
        ...PIECES.map((text) => frame('chunk', b64({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } }))),
        frame('chunk', b64({ type: 'content_block_stop', index: 0 })),
        frame('chunk', b64({ type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: USAGE.outputTokens } })),
        frame('chunk', b64({ type: 'message_stop', 'amazon-bedrock-invocationMetrics': { inputTokenCount: USAGE.inputTokens, outputTokenCount: USAGE.outputTokens, invocationLatency: 40, firstByteLatency: 10 } })),
      ]);
    case 'count-tokens':
      return json({ inputTokens: USAGE.inputTokens });
    default:
      res.writeHead(404, { 'content-type': 'application/json', 'x-amzn-errortype': 'UnknownOperationException' });
      res.end('{"message":"unknown operation"}');
  }
}

export async function startFakeBedrock(): Promise<FakeBedrock> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const authorization = String(req.headers.authorization ?? '');
      let auth: string;
      if (authorization.startsWith('Bearer ')) auth = fake.apiKeys.has(authorization.slice(7)) ? 'bearer' : 'unknown api key';
      else auth = verifySigV4(req, body, fake.keys) ?? 'sigv4';
      fake.received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, auth });
      if (auth !== 'bearer' && auth !== 'sigv4') return refuse(res, auth === 'unknown api key' ? 'AccessDeniedException' : 'InvalidSignatureException', `refused: ${auth}`);
      const region = /Credential=[^/]+\/\d{8}\/([^/]+)\//.exec(authorization)?.[1];
      const down = region === undefined ? undefined : fake.failRegions.get(region);
      if (down !== undefined) {
        res.writeHead(down, { 'content-type': 'application/json', 'x-amzn-errortype': 'ServiceUnavailableException' });
        res.end(JSON.stringify({ message: `${region} is unavailable` }));
        return;
      }
      void answer(fake, req, res);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const fake: FakeBedrock = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: [],
    keys: new Map(),
    apiKeys: new Set(),
    echo: false,
    failRegions: new Map(),
    close: () => new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
  return fake;
}
