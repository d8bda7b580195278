/**
 * Settlement's one rule (src/gateway/exit/settlement.ts), per provider shape: Anthropic, OpenAI chat and
 * Responses, Gemini, Bedrock's ConverseStream and InvokeModelWithResponseStream event streams, Vertex's
 * Anthropic and Gemini publishers. Each stream is cut after each event in turn, by the provider and by
 * the caller leaving, and what the gateway charged (its log line) is never below what the fake provider
 * bills for it: a cut before the provider's end-of-message event is charged the whole reservation,
 * partial usage (Anthropic's message_start) included; a cut after it, and a whole stream, is charged
 * exactly the final usage. (Issue 23: a cut Anthropic stream after message_start was charged input + 1
 * output token.)
 */
import test from 'ava';
import { worstCaseCost } from '../../src/pricing/prices.js';
import { INPUT_OVERHEAD_TOKENS } from '../../src/pricing/spend-bound.js';
import { billCost, billingGateway, priceOf } from '../support/billing-gateway.js';
import { bytesOfEvents, SHAPE_SPECS, SHAPES, type StreamShape } from '../support/billing-provider.js';
import { send } from '../support/transport.js';

const MAX_TOKENS = 4000;
const INPUT = 40;
const OUTPUT = 123;

for (const shape of SHAPES) {
  test(`${shape}: cut after each event, by the provider and by the caller, the charge is never below the bill; whole, it is the bill`, async (t) => {
    const g = await billingGateway(t);
    const spec = SHAPE_SPECS[shape];
    const tok = await g.token(spec.provider, { budget_usd: '1000' });
    const body = JSON.stringify(spec.body(MAX_TOKENS));
    const price = priceOf(spec.provider, spec.model);
    // A body with no media has no audio input: reserved at the text prices (Gemini Flash prices audio input apart).
    const reservation = worstCaseCost(price, Buffer.byteLength(body) + INPUT_OVERHEAD_TOKENS, MAX_TOKENS, false);
    const n = spec.events(INPUT, OUTPUT).length;
    let runs = 0;
    for (const mode of ['provider', 'caller', 'whole'] as const) {
      for (let k = mode === 'whole' ? n : 0; k <= n; k++) {
        if (mode !== 'whole' && k === n) continue;
        const id = `${shape}-${mode}-${k}`;
        const headers: Record<string, string> = { 'x-proxy-token': tok.token, 'x-bill-id': id, 'x-bill-input': String(INPUT), 'x-bill-output': String(OUTPUT) };
        if (mode === 'provider') headers['x-bill-cut'] = String(k);
        if (mode === 'caller') headers['x-bill-pause'] = String(k);
        const want = bytesOfEvents(shape as StreamShape, k, INPUT, OUTPUT);
        let got = 0;
        const r = await send(g.apps[0]!.url, {
          transport: 'h1', path: `/v1/proxy/${spec.path}`, headers, body,
          // The caller leaves once it has read the first k events (at its head for k = 0).
          onHead: (abort) => {
            if (mode === 'caller' && k === 0) abort();
          },
          onData: (chunk, abort) => {
            got += chunk.length;
            if (mode === 'caller' && got >= want) abort();
          },
        });
        const requestId = String(r.headers['x-keyward-request-id'] ?? '');
        t.is(r.status, 200, `${id}: ${r.text.slice(0, 200)}`);
        const charged = (await g.chargeOf(requestId)) ?? 0;
        const bill = g.fake.bills.get(id)!;
        t.truthy(bill, `${id}: the provider saw it`);
        const billed = billCost(bill);
        t.true(charged >= billed, `${id}: charged ${charged} µ$ ≥ billed ${billed} µ$ (${bill.finished ? 'finished' : 'cut before the final usage'})`);
        if (bill.finished) t.is(charged, billed, `${id}: the final usage is what is charged`);
        if (!bill.finished) t.is(charged, reservation, `${id}: cut before the final usage, the whole reservation`);
        runs++;
      }
    }
    t.true(runs >= 2 * n);
  });
}
