/**
 * Pure functions of the proxy's path handling and token scopes:
 * normaliseProviderPath (decode once, refuse anything that could change meaning
 * on the way upstream), compileRoute/matchRoute (the allow-list), and the scope
 * helpers pathAllowed, modelAllowed and parseScopes.
 */
import test from 'ava';
import { ApiError } from '../../src/errors.js';
import { compileRoute, matchRoute, normaliseProviderPath, routeAdmitsPrefix, validRoutePattern } from '../../src/catalog/path.js';
import { validateProvider } from '../../src/catalog/registry.js';
import { modelAllowed, parseScopes, pathAllowed } from '../../src/catalog/scopes.js';
import anthropic from '../../providers/anthropic.js';
import gemini from '../../providers/gemini.js';
import openai from '../../providers/openai.js';

const OPENAI = validateProvider('openai.js', openai);
const ANTHROPIC = validateProvider('anthropic.js', anthropic);
const GEMINI = validateProvider('gemini.js', gemini);

test('normaliseProviderPath keeps clean provider paths as they are', (t) => {
  for (const p of [
    'v1/chat/completions',
    'openai/v1/chat/completions',
    'v1beta/models/gemini-2.0-flash:streamGenerateContent',
    'v1/models/gpt-4o-mini',
    'v1/responses/resp_abc123/input_items',
    'v1/a~b/c.d_e-f',
    'v1/messages',
  ]) {
    t.is(normaliseProviderPath(p), p, p);
  }
});

test('normaliseProviderPath decodes unreserved percent-escapes exactly once', (t) => {
  t.is(normaliseProviderPath('v1/ch%61t/completions'), 'v1/chat/completions');
  t.is(normaliseProviderPath('v1beta/models/gemini-2.0-flash%3AgenerateContent'), 'v1beta/models/gemini-2.0-flash:generateContent');
  t.is(normaliseProviderPath('v1/%7Ex'), 'v1/~x');
});

test('normaliseProviderPath refuses every traversal, encoded separator, double encoding and stray character', (t) => {
  const refused = [
    '', '.', '..', 'v1/../v1/chat/completions', '../v1/chat/completions', 'v1/chat/completions/..', 'v1/./chat/completions',
    '%2e%2e/v1/chat/completions', 'v1/%2e%2e/admin', 'v1/%2E%2E/admin', 'v1/%2e/chat', '.%2e/x', '%2e./x',
    '%252e%252e/v1/chat/completions', 'v1/%252f', 'v1%252fchat',
    '..%2fv1/chat/completions', 'v1%2fchat/completions', 'v1/chat%2Fcompletions', 'v1%2Fchat%2Fcompletions',
    '/evil.test/x', '//evil.test/x', 'v1//chat/completions', 'v1/chat/completions//', '/v1/chat/completions', '/', 'v1/../', 'v1/%2e%2e/',
    'v1/chat/completions;x', 'v1/chat/completions;jsessionid=1', 'v1\\chat\\completions', 'v1/%5cchat', 'v1/%5Cchat',
    'v1/chat/completions?x=1', 'v1/chat/completions#frag', 'v1/chat completions', 'v1/%20x', 'v1/%00x', 'v1/%0d%0aX-Injected:1',
    'v1/%', 'v1/%zz', 'v1/%2', 'v1/%E2%82%AC', 'v1/€', 'v1/@evil', 'http://evil.test/x', 'v1/chat/completions\u0000',
    'v1/' + 'a'.repeat(2048),
  ];
  for (const p of refused) t.is(normaliseProviderPath(p), undefined, JSON.stringify(p));
  // One trailing slash is kept, not repaired: it is a route of its own (GitHub's MCP server is `mcp/`), so
  // `v1/chat/completions/` matches no route of a provider that declares only `v1/chat/completions`.
  t.is(normaliseProviderPath('v1/chat/completions/'), 'v1/chat/completions/');
});

test('validRoutePattern accepts provider patterns and rejects malformed ones', (t) => {
  for (const p of ['v1/chat/completions', 'v1beta/models/{model}:generateContent', 'v1/responses/{id}/cancel', 'mcp/']) t.true(validRoutePattern(p), p);
  for (const p of ['/v1/chat', 'v1/chat//', '/', 'v1//chat', 'v1/../x', 'v1/./x', 'v1/ch at', 'v1/*', 'v1/chat?x', '']) t.false(validRoutePattern(p), p);
});

test('matchRoute: method and path must both match; {param} captures one safe segment', (t) => {
  const routes = [
    compileRoute({ method: 'POST', path: 'v1/chat/completions' }),
    compileRoute({ method: 'GET', path: 'v1/models/{model}' }),
    compileRoute({ method: 'POST', path: 'v1beta/models/{model}:generateContent' }),
    compileRoute({ method: 'DELETE', path: 'v1/responses/{id}' }),
  ];
  const chat = matchRoute(routes, 'POST', 'v1/chat/completions');
  t.is(chat?.route.pattern, 'v1/chat/completions');
  t.deepEqual(chat?.params, {});
  t.is(matchRoute(routes, 'GET', 'v1/chat/completions'), undefined);
  t.is(matchRoute(routes, 'DELETE', 'v1/chat/completions'), undefined);
  t.is(matchRoute(routes, 'post', 'v1/chat/completions'), undefined, 'methods are exact');
  t.is(matchRoute(routes, 'POST', 'v1/chat/completions/x'), undefined, 'anchored at the end');
  t.is(matchRoute(routes, 'POST', 'x/v1/chat/completions'), undefined, 'anchored at the start');
  t.is(matchRoute(routes, 'POST', 'v1/chat/completionsX'), undefined);
  t.is(matchRoute(routes, 'POST', 'V1/chat/completions'), undefined, 'paths are case-sensitive');

  t.deepEqual(matchRoute(routes, 'GET', 'v1/models/gpt-4o')?.params, { model: 'gpt-4o' });
  t.is(matchRoute(routes, 'GET', 'v1/models/a/b'), undefined, 'a parameter is one segment');
  t.is(matchRoute(routes, 'GET', 'v1/models/'), undefined, 'a parameter is never empty');
  t.is(matchRoute(routes, 'GET', 'v1/models/..'), undefined, 'a parameter never starts with a dot');
  t.is(matchRoute(routes, 'GET', 'v1/models/.hidden'), undefined);

  const g = matchRoute(routes, 'POST', 'v1beta/models/gemini-2.0-flash:generateContent');
  t.deepEqual(g?.params, { model: 'gemini-2.0-flash' });
  t.is(g?.route.pattern, 'v1beta/models/{model}:generateContent');
  t.is(matchRoute(routes, 'POST', 'v1beta/models/a:b:generateContent'), undefined, 'the model segment holds no colon');
  t.is(matchRoute(routes, 'POST', 'v1beta/models/:generateContent'), undefined);
  t.is(matchRoute(routes, 'POST', 'v1beta/models/gemini:generateContentX'), undefined);
  t.deepEqual(matchRoute(routes, 'DELETE', 'v1/responses/resp_1')?.params, { id: 'resp_1' });
});

test('matchRoute on the real provider files: methods the providers do not allow are not allowed', (t) => {
  t.truthy(matchRoute(OPENAI.routes, 'POST', 'v1/chat/completions'));
  t.is(matchRoute(OPENAI.routes, 'DELETE', 'v1/chat/completions'), undefined);
  t.is(matchRoute(OPENAI.routes, 'GET', 'v1/chat/completions'), undefined);
  t.truthy(matchRoute(OPENAI.routes, 'GET', 'v1/models'));
  t.is(matchRoute(OPENAI.routes, 'POST', 'v1/files'), undefined, 'file upload is not on the list');
  t.truthy(matchRoute(ANTHROPIC.routes, 'POST', 'v1/messages'));
  t.is(matchRoute(ANTHROPIC.routes, 'GET', 'v1/messages'), undefined);
  t.deepEqual(matchRoute(GEMINI.routes, 'POST', 'v1beta/models/gemini-2.0-flash:streamGenerateContent')?.params, { model: 'gemini-2.0-flash' });
  t.is(matchRoute(GEMINI.routes, 'POST', 'v1beta/models/gemini-2.0-flash:deleteEverything'), undefined);
});

test('routeAdmitsPrefix: true exactly when some path the route matches starts with the prefix', (t) => {
  const cancel = compileRoute({ method: 'POST', path: 'v1/responses/{id}/cancel' });
  for (const p of ['', 'v', 'v1/', 'v1/responses/', 'v1/responses/r', 'v1/responses/resp.1', 'v1/responses/resp_1/', 'v1/responses/resp_1/can', 'v1/responses/resp_1/cancel']) {
    t.true(routeAdmitsPrefix(cancel, p), p);
  }
  for (const p of ['x', 'v2', 'v1/responses/.', 'v1/responses//', 'v1/responses/{id}', 'v1/responses/{', 'v1/responses/a/b', 'v1/responses/a/cancelX', 'v1/responses/a/cancel/', 'v1/responses/a:b']) {
    t.false(routeAdmitsPrefix(cancel, p), p);
  }
  const gen = compileRoute({ method: 'POST', path: 'v1beta/models/{model}:generateContent' });
  t.true(routeAdmitsPrefix(gen, 'v1beta/models/gemini-2.0-flash'));
  t.true(routeAdmitsPrefix(gen, 'v1beta/models/gemini-2.0-flash:gen'));
  t.false(routeAdmitsPrefix(gen, 'v1beta/models/gemini:stream'));
  t.false(routeAdmitsPrefix(gen, 'v1beta/models/a/b'));
  const chat = compileRoute({ method: 'POST', path: 'v1/chat/completions' });
  t.true(routeAdmitsPrefix(chat, 'v1/chat/completions'));
  t.false(routeAdmitsPrefix(chat, 'v1/chat/completions/'));
  t.false(routeAdmitsPrefix(chat, 'v1/chat.completions'), 'a dot in a literal is a dot');
});

test('pathAllowed: exact path, the route pattern itself, or a prefix*', (t) => {
  t.true(pathAllowed(['v1/chat/completions'], 'v1/chat/completions', 'v1/chat/completions'));
  t.false(pathAllowed(['v1/chat/completions'], 'v1/embeddings', 'v1/embeddings'));
  t.true(pathAllowed(['v1/responses/{id}'], 'v1/responses/resp_1', 'v1/responses/{id}'));
  t.false(pathAllowed(['v1/responses/{id}'], 'v1/responses/resp_1/cancel', 'v1/responses/{id}/cancel'));
  t.true(pathAllowed(['v1/responses/resp_1'], 'v1/responses/resp_1', 'v1/responses/{id}'));
  t.false(pathAllowed(['v1/responses/resp_1'], 'v1/responses/resp_2', 'v1/responses/{id}'));
  t.true(pathAllowed(['v1/responses*'], 'v1/responses/resp_1/cancel', 'v1/responses/{id}/cancel'));
  t.false(pathAllowed(['v1/responses*'], 'v1/chat/completions', 'v1/chat/completions'));
  t.true(pathAllowed(['v1/embeddings', 'v1/chat*'], 'v1/chat/completions', 'v1/chat/completions'));
  t.false(pathAllowed([], 'v1/chat/completions', 'v1/chat/completions'));
  t.false(pathAllowed(['v1/chat/completions*'], 'v1/chat/complete', 'v1/chat/complete'), 'a prefix must be a prefix');
});

test('modelAllowed: exact names, prefix*, and * for any', (t) => {
  t.true(modelAllowed(['gpt-4o'], 'gpt-4o'));
  t.false(modelAllowed(['gpt-4o'], 'gpt-4o-mini'), 'exact is exact');
  t.false(modelAllowed(['gpt-4o'], 'GPT-4O'), 'case-sensitive');
  t.false(modelAllowed(['gpt-4o'], 'gpt-4'));
  t.true(modelAllowed(['gpt-4.1*'], 'gpt-4.1'));
  t.true(modelAllowed(['gpt-4.1*'], 'gpt-4.1-mini'));
  t.false(modelAllowed(['gpt-4.1*'], 'gpt-4'));
  t.false(modelAllowed(['gpt-4.1*'], 'xgpt-4.1'));
  t.true(modelAllowed(['claude-3*', 'gpt-4o'], 'claude-3-5-sonnet'));
  t.true(modelAllowed(['*'], 'anything'));
  t.false(modelAllowed([], 'gpt-4o'));
  t.false(modelAllowed(['gpt-4o'], ''));
});

function scopeError(t: import('ava').ExecutionContext, fn: () => unknown, param: string, label: string): void {
  const err = t.throws(fn, { instanceOf: ApiError }, label);
  t.is(err?.status, 400, label);
  t.is(err?.code, 'invalid_scope', label);
  t.is(err?.type, 'invalid_request', label);
  t.is(err?.param, param, label);
}

test('parseScopes accepts and normalises good scopes', (t) => {
  t.deepEqual(parseScopes({}, OPENAI), {});
  t.deepEqual(parseScopes({ ttl: '15m', credential_id: 'cred_x' }, OPENAI), {}, 'other fields are ignored');
  t.deepEqual(
    parseScopes({ models: ['gpt-4o', 'gpt-4.1*', 'gpt-4o'], paths: ['v1/chat/completions', 'v1/responses*'], max_requests: 10, rate_limit: 60 }, OPENAI),
    { models: ['gpt-4o', 'gpt-4.1*'], paths: ['v1/chat/completions', 'v1/responses*'], maxRequests: 10, rateLimit: 60 },
    'duplicates are dropped',
  );
  t.deepEqual(parseScopes({ paths: ['v1/responses/{id}'] }, OPENAI).paths, ['v1/responses/{id}']);
  t.deepEqual(parseScopes({ paths: ['v1/responses/resp_1'] }, OPENAI).paths, ['v1/responses/resp_1']);
  t.deepEqual(parseScopes({ paths: ['v1/*'] }, OPENAI).paths, ['v1/*']);
  t.deepEqual(parseScopes({ paths: ['v1/responses/resp_1/input*'] }, OPENAI).paths, ['v1/responses/resp_1/input*'], 'a prefix can end inside a route');
  t.deepEqual(parseScopes({ paths: ['v1beta/models/gemini-2.0-flash:generateContent'] }, GEMINI).paths, ['v1beta/models/gemini-2.0-flash:generateContent']);
  t.deepEqual(parseScopes({ paths: ['v1beta/models/gemini*'] }, GEMINI).paths, ['v1beta/models/gemini*']);
  t.deepEqual(parseScopes({ paths: ['v1beta/models/gemini-2.0-flash:stream*'] }, GEMINI).paths, ['v1beta/models/gemini-2.0-flash:stream*']);
  t.deepEqual(parseScopes({ models: ['claude-sonnet-4*'] }, ANTHROPIC).models, ['claude-sonnet-4*']);
  t.deepEqual(parseScopes({ models: ['*'] }, ANTHROPIC).models, ['*']);
  t.deepEqual(parseScopes({ models: ['accounts/fireworks/models/llama-v3p1-8b-instruct', 'meta-llama/Llama-3.3-70B@latest'] }, OPENAI).models?.length, 2);
  t.is(parseScopes({ max_requests: 1 }, OPENAI).maxRequests, 1);
  t.is(parseScopes({ rate_limit: 1 }, OPENAI).rateLimit, 1);
});

test('parseScopes: a scope that can never match, or of the wrong type, is 400 invalid_scope naming the field', (t) => {
  const bad: Array<[Record<string, unknown>, string]> = [
    [{ models: [] }, 'models'],
    [{ models: 'gpt-4o' }, 'models'],
    [{ models: null }, 'models'],
    [{ models: {} }, 'models'],
    [{ models: [1] }, 'models'],
    [{ models: [''] }, 'models'],
    [{ models: ['gpt 4o'] }, 'models'],
    [{ models: ['gpt*4o'] }, 'models'],
    [{ models: ['**'] }, 'models'],
    [{ models: [null] }, 'models'],
    [{ models: Array.from({ length: 101 }, (_, i) => `m${i}`) }, 'models'],
    [{ paths: [] }, 'paths'],
    [{ paths: 'v1/chat/completions' }, 'paths'],
    [{ paths: [42] }, 'paths'],
    [{ paths: ['v1/nope'] }, 'paths'],
    [{ paths: ['v2*'] }, 'paths'],
    [{ paths: ['/v1/chat/completions'] }, 'paths'],
    [{ paths: ['v1/../v1/chat/completions'] }, 'paths'],
    [{ paths: ['v1//chat/completions'] }, 'paths'],
    [{ paths: ['*'] }, 'paths'],
    [{ paths: ['v1/chat/completions', 'v1/files'] }, 'paths'],
    [{ paths: ['v1/responses/{nope}'] }, 'paths'],
    [{ paths: ['v1/chat/completions?x=1'] }, 'paths'],
    // Prefixes that reach past the end of every route, or into a segment no route allows.
    [{ paths: ['v1/chat/completions/extra*'] }, 'paths'],
    [{ paths: ['v1/chat/completionsX*'] }, 'paths'],
    [{ paths: ['v1/responses/abc/def/ghi*'] }, 'paths'],
    [{ paths: ['v1/responses/{id}/c*'] }, 'paths'],
    [{ max_requests: 0 }, 'max_requests'],
    [{ max_requests: -1 }, 'max_requests'],
    [{ max_requests: 1.5 }, 'max_requests'],
    [{ max_requests: '10' }, 'max_requests'],
    [{ max_requests: null }, 'max_requests'],
    [{ max_requests: true }, 'max_requests'],
    [{ max_requests: Number.NaN }, 'max_requests'],
    [{ max_requests: Infinity }, 'max_requests'],
    [{ max_requests: 1e12 }, 'max_requests'],
    [{ rate_limit: 0 }, 'rate_limit'],
    [{ rate_limit: -60 }, 'rate_limit'],
    [{ rate_limit: 2.5 }, 'rate_limit'],
    [{ rate_limit: '60' }, 'rate_limit'],
    [{ rate_limit: [60] }, 'rate_limit'],
  ];
  for (const [body, param] of bad) scopeError(t, () => parseScopes(body, OPENAI), param, JSON.stringify(body).slice(0, 80));
  scopeError(t, () => parseScopes({ paths: ['v1/messages'] }, OPENAI), 'paths', 'anthropic path on openai');
  scopeError(t, () => parseScopes({ paths: ['v1/chat/completions'] }, ANTHROPIC), 'paths', 'openai path on anthropic');
  scopeError(t, () => parseScopes({ paths: ['v1beta/models/x:bogus*'] }, GEMINI), 'paths', 'gemini action no route has');
  scopeError(t, () => parseScopes({ paths: ['v1beta/models/a/b*'] }, GEMINI), 'paths', 'gemini model is one segment');
  scopeError(t, () => parseScopes({ paths: ['v1beta/models/a:b:generateContent'] }, GEMINI), 'paths', 'gemini model holds no colon');
});
