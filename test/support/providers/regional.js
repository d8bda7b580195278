// A provider whose origin depends on the credential: `https://api.{region}.regional.test`, the
// region a plain field with a strict pattern. Its signer records what it saw (origin, path,
// host) in globalThis.__regionalSeen for test/proxy/provider-credentials.test.ts, and refuses a
// request that carries `x-test-stop` (a thrown Error: 502, nothing sent).
export default {
  apiVersion: 1,
  id: 'regional',
  upstream: 'https://api.{region}.regional.test/base',
  credential: {
    fields: {
      api_key: { secret: true },
      region: { pattern: /^[a-z]{2}-[a-z]+-\d$/, description: 'e.g. eu-west-1' },
    },
  },
  auth: {
    kind: 'signer',
    signer: {
      needsBody: false,
      sign(request, credential) {
        (globalThis.__regionalSeen ??= []).push({ origin: request.origin, path: request.path, host: request.headers.host, query: request.query });
        if (request.headers['x-test-stop']) throw new Error(`stopped before sending ${credential.secrets.api_key}`);
        request.headers.authorization = `Bearer ${credential.secrets.api_key}`;
      },
    },
  },
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  routes: [{ method: 'POST', path: 'v1/chat/completions' }],
};
