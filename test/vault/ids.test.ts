import test from 'ava';
import { isId, isWellFormedToken, newId, newToken } from '../../src/ids.js';

test('ids sort in creation order, even thousands within one millisecond', (t) => {
  const ids = Array.from({ length: 5000 }, () => newId('cred'));
  for (const id of ids) t.true(isId('cred', id));
  const sorted = [...ids].sort();
  t.deepEqual(sorted, ids);
  t.is(new Set(ids).size, ids.length);
});

test('tokens carry a checksum: one changed character is recognised offline', (t) => {
  const token = newToken('ptok');
  t.true(isWellFormedToken('ptok', token));
  t.false(isWellFormedToken('otok', token));
  const i = 10;
  const flipped = token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1);
  t.false(isWellFormedToken('ptok', flipped));
  t.regex(token, /^ptok_[0-9A-Za-z]{38}$/);
});
