// A provider that signs each request with HMAC-SHA256 over its method, path, query and exact
// body bytes, from two secret fields (`key_id` sent in a header, `key_secret` never sent): its
// own signer object, using node:crypto. Plain ESM, copied into KEYWARD_PROVIDERS_DIR by
// test/proxy/provider-auth.test.ts, whose fake upstream recomputes the signature.
import { createHmac } from 'node:crypto';

/** What is signed: the fake upstream recomputes the same from what it received. */
export function signature(secret, method, pathAndQuery, body) {
  return createHmac('sha256', secret).update(`${method}\n${pathAndQuery}\n`).update(body).digest('hex');
}

export default {
  apiVersion: 1,
  id: 'hmacco',
  name: 'HMAC Co',
  upstream: 'https://api.hmacco.test',
  credential: {
    fields: {
      key_id: { secret: true, pattern: /^kid_[A-Za-z0-9]{8,64}$/ },
      key_secret: { secret: true, main: true },
    },
  },
  auth: {
    kind: 'signer',
    signer: {
      needsBody: true,
      sign(request, credential) {
        const target = request.query ? `${request.path}?${request.query}` : request.path;
        request.headers['x-hmac-key-id'] = credential.secrets.key_id;
        request.headers['x-hmac-signature'] = signature(credential.secrets.key_secret, request.method, target, request.body);
      },
    },
  },
  tokenIn: [{ header: 'authorization', scheme: 'Bearer' }],
  usage: 'openai',
  routes: [{ method: 'POST', path: 'v1/chat/completions' }],
};
