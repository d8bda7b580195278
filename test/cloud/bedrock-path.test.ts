/**
 * Resource ids in paths (pure functions): normaliseResourcePath keeps an encoded slash
 * inside a segment as `%2F` and refuses everything normaliseProviderPath refuses in each
 * piece; only a route parameter declared in `resourceParams` admits `:` and `%2F`; a
 * provider file that names a parameter its path lacks stops start-up.
 */
import test from 'ava';
import { compileRoute, matchRoute, normaliseProviderPath, normaliseResourcePath, routeAdmitsPrefix } from '../../src/catalog/path.js';
import { validateProvider } from '../../src/catalog/registry.js';

test('normaliseResourcePath keeps an encoded slash encoded and checks every piece', (t) => {
  t.is(normaliseResourcePath('model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.a-v1%3A0/converse'), 'model/arn:aws:bedrock:us-east-1:1:inference-profile%2Fus.a-v1:0/converse');
  t.is(normaliseResourcePath('model/a%2fb/converse'), 'model/a%2Fb/converse', 'lower-case escape, canonical upper-case out');
  for (const p of ['model/a%2F..%2Fb/x', 'model/a%2F.%2Fb/x', 'model/%2Fa/x', 'model/a%2F/x', 'model/a%252Fb/x', 'model/a%5Cb/x', 'model//x', '../x', 'model/a%2F%2Fb/x', 'model/a b/x', '']) {
    t.is(normaliseResourcePath(p), undefined, p);
  }
  t.is(normaliseProviderPath('model/a%2Fb/converse'), undefined, 'the strict normaliser is unchanged');
});

test('only a declared resource parameter admits `:` and %2F', (t) => {
  const plain = compileRoute({ method: 'POST', path: 'model/{model}/converse' });
  const resource = compileRoute({ method: 'POST', path: 'model/{model}/converse', resourceParams: ['model'] });
  t.is(matchRoute([plain], 'POST', 'model/a%2Fb/converse'), undefined);
  t.is(matchRoute([plain], 'POST', 'model/a:0/converse'), undefined);
  t.deepEqual(matchRoute([resource], 'POST', 'model/a%2Fb:0/converse')?.params, { model: 'a%2Fb:0' });
  t.is(matchRoute([resource], 'POST', 'model/a/b/converse'), undefined, 'a raw slash is still a segment boundary');
  t.is(matchRoute([resource], 'POST', 'model/.a/converse'), undefined, 'never starting with a dot');
  t.true(routeAdmitsPrefix(resource, 'model/arn:aws'));
  t.false(routeAdmitsPrefix(plain, 'model/arn:aws'));
  const err = t.throws(() => validateProvider('broken.js', { id: 'broken', upstream: 'https://x.test', auth: { kind: 'header', header: 'x-key' }, routes: [{ method: 'POST', path: 'model/{model}/x', resourceParams: ['id'] }] }));
  t.regex(err?.message ?? '', /`resourceParams` must name parameters of its path/);
});
