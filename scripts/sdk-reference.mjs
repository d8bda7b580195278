/**
 * Writes docs/extend/sdk-reference.md from the SDK's own types (sdk/src/): each module's header comment as its
 * introduction and its declarations, doc comments included, as they are written. `npm run docs:sdk` rewrites it;
 * test/docs/sdk-reference.test.ts fails when the page is not what this makes of the current sources.
 * Usage: node scripts/sdk-reference.mjs [--check]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const PAGE = path.join(ROOT, 'docs/extend/sdk-reference.md');
/** The modules in reading order, with the heading each gets. */
const MODULES = [
  ['index.ts', 'The package: defineProvider and defineMiddleware'],
  ['version.ts', 'ApiVersion'],
  ['provider.ts', 'Providers: ProviderPlugin, Signer, UsageReader'],
  ['prices.ts', 'Prices: ModelPrice, PriceDimension, BilledTool, TokenUsage'],
  ['realtime.ts', 'Realtime protocols: RealtimeProtocol, RealtimeHost, the books'],
  ['middleware.ts', 'Middleware: MiddlewarePlugin, hooks, body hooks'],
  ['request.ts', 'The request a middleware sees: RequestView'],
  ['host.ts', 'The host: Host, Logger, Clock, Timers, HostConfig'],
  ['errors.ts', 'Errors: GatewayError, ErrorCode'],
];

/** A module's header comment as prose (its `*` margins removed), and the rest of its source. */
function split(source) {
  const m = /^\/\*\*\n([\s\S]*?)\n \*\/\n/.exec(source);
  if (!m) return { intro: '', body: source.trim() };
  const intro = m[1].split('\n').map((l) => l.replace(/^ \* ?/, '')).filter((l) => !/^@[a-zA-Z]+$/.test(l)).join('\n').trim();
  return { intro, body: source.slice(m[0].length).trim() };
}

export function render() {
  const version = JSON.parse(readFileSync(path.join(ROOT, 'sdk/package.json'), 'utf8')).version;
  const parts = [
    '# SDK reference',
    '',
    `Generated from the types of \`@keyward/sdk\` ${version} (plugin API version 1) by \`npm run docs:sdk\`; do not edit by hand.`,
    'Back to the [docs](../README.md); the guides are [providers](providers.md), [middleware](middleware.md) and [the tutorial](tutorial.md).',
    '',
  ];
  for (const [file, heading] of MODULES) {
    const { intro, body } = split(readFileSync(path.join(ROOT, 'sdk/src', file), 'utf8'));
    parts.push(`## ${heading}`, '', `\`sdk/src/${file}\``, '');
    if (intro) parts.push(intro, '');
    parts.push('```ts', body, '```', '');
  }
  return parts.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const page = render();
  if (process.argv.includes('--check')) {
    if (readFileSync(PAGE, 'utf8') !== page) {
      console.error('docs/extend/sdk-reference.md is not current: run npm run docs:sdk');
      process.exit(1);
    }
  } else {
    writeFileSync(PAGE, page);
  }
}
