// A provider added with no code change whose SDK sends its key in `x-meter-key`, a header no
// built-in provider uses, and whose responses report usage in a shape of their own
// (`{"meter":{"in":12,"out":34}}`), read by the file's own reader. Plain ESM, copied into
// KEYWARD_PROVIDERS_DIR by test/proxy/provider-auth.test.ts.
const METER = /"meter"\s*:\s*\{\s*"in"\s*:\s*(\d{1,12})\s*,\s*"out"\s*:\s*(\d{1,12})/;

export default {
  apiVersion: 1,
  id: 'meter',
  name: 'Meter AI',
  upstream: 'https://api.meter.test',
  auth: { kind: 'header', header: 'x-meter-key' },
  tokenIn: [{ header: 'x-meter-key' }],
  // One reader per response: it keeps the (small) body's text and reads the counts at the end.
  usage: () => {
    let text = '';
    return {
      scan(chunk) {
        if (text.length < 65536) text += chunk.toString('latin1');
      },
      end() {
        const m = METER.exec(text);
        return m ? { inputTokens: Number(m[1]), outputTokens: Number(m[2]) } : undefined;
      },
    };
  },
  routes: [{ method: 'POST', path: 'v1/run' }],
};
