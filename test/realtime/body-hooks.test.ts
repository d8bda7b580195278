/**
 * Plugins' body hooks on realtime sessions: each message, both ways, is a body of its own. A caller's message is
 * changed before the provider (and the protocol) has it, or refused with the protocol's error event while the
 * session goes on; a provider's message is changed before masking (the stored key stays masked whatever the hook
 * did), or refused, which ends the session (the error event, then 1008); a message a hook gives nothing out for is
 * not sent.
 */
import test from 'ava';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '../support/app.js';
import { pluginSource } from '../support/body-hook-plugins.js';
import { realtimeFixture } from '../support/realtime-fixture.js';

const item = (text: string) => ({ type: 'conversation.item.create', item: { type: 'message', role: 'user', content: [{ type: 'input_text', text }] } });
const textOf = (m: Record<string, any>): string | undefined => m.item?.content?.[0]?.text;

test('each realtime message passes the hooks both ways: changed, dropped, refused (the session goes on), or refused from the provider (1008)', async (t) => {
  const dir = tempDir(t, 'keyward-hook-plugins-');
  writeFileSync(path.join(dir, 'rtguard.js'), pluginSource({
    name: 'rtguard',
    // Dropping a message is holding it back for good: within maxBuffer (per message).
    maxBuffer: 4096,
    request: `if (!piece) return undefined;
      const text = Buffer.from(piece).toString('utf8');
      if (text.includes('forbidden')) throw new host.GatewayError(400, 'invalid_request', 'content_refused', 'not that');
      if (text.includes('drop-me')) return '';
      return text.replace('alpha', 'ALPHA');`,
    response: `if (!piece) return undefined;
      const text = Buffer.from(piece).toString('utf8');
      if (text.includes('poison')) throw new host.GatewayError(502, 'upstream', 'content_refused', 'not that either');
      return text.replace('ALPHA', 'omega').replace('your key is ', 'KEY:');`,
  }));
  const f = await realtimeFixture(t, { env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: 'rtguard' } });
  const tok = await f.mint('openai');
  const c = await f.open('v1/realtime?model=gpt-realtime', { authorization: `Bearer ${tok.token}` });
  await c.waitFor((m) => m.type === 'session.created');

  c.send(item('alpha'));
  const changed = await c.waitFor((m) => m.type === 'conversation.item.created' && textOf(m) !== undefined);
  t.is(textOf(changed), 'omega', 'changed on the way up (ALPHA) and on the way down (omega)');
  t.is(textOf(f.fake.received[0]!.at(-1)!), 'ALPHA', 'the provider had the changed message');

  c.send(item('drop-me'));
  c.send(item('forbidden'));
  const refused = await c.waitFor((m) => m.type === 'error');
  t.is(refused.error.code, 'content_refused');
  c.send(item('echo-key'));
  const echoed = await c.waitFor((m) => textOf(m)?.startsWith('KEY:') === true);
  t.is(textOf(echoed), `KEY:${'*'.repeat(f.key.length)}`, 'masked after the hook');
  t.deepEqual(f.fake.received[0]!.map(textOf).filter(Boolean), ['ALPHA', 'echo-key'], 'neither the dropped nor the refused message reached the provider');

  c.send(item('poison'));
  const closed = await c.closed;
  t.is(closed.code, 1008);
  t.regex(closed.reason, /content_refused/);
  t.false(c.received.some((m) => JSON.stringify(m).includes('poison')), 'the refused provider message never reached the caller');
  t.is(c.received.filter((m) => m.type === 'error').length, 2, 'an error event before the close');
});
