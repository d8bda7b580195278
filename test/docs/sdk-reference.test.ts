/**
 * docs/extend/sdk-reference.md is generated from the SDK's types (scripts/sdk-reference.mjs): it must be what the
 * generator makes of the current sdk/src/, so the reference never lags the types authors compile against.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/app.js';
import { pathToFileURL } from 'node:url';

// The generator is a plain ESM script (no types, not compiled): loaded from the checkout, wherever this test runs from.
const { render } = await import(pathToFileURL(path.join(ROOT, 'scripts/sdk-reference.mjs')).href) as { render: () => string };

test('the SDK reference page is current with sdk/src (npm run docs:sdk rewrites it)', (t) => {
  const page = readFileSync(path.join(ROOT, 'docs/extend/sdk-reference.md'), 'utf8');
  t.is(page, render(), 'run npm run docs:sdk');
  for (const name of ['ProviderPlugin', 'MiddlewarePlugin', 'RequestView', 'Host', 'UsageReader', 'Signer', 'ModelPrice', 'defineProvider', 'defineMiddleware']) {
    t.regex(page, new RegExp(`\\b${name}\\b`), name);
  }
});
