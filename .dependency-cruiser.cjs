/**
 * Folders point one way: the layers below are ordered lowest first, and a layer may import
 * from its own layer or a lower one, never up, and nothing may form a cycle, so each folder
 * can be read knowing only what lies below it. Checked in `npm test` (`npm run lint:deps`).
 * Parsed with swc: TypeScript 7 has no JS compiler API dependency-cruiser can load, and
 * type-only imports count as dependencies too.
 */
const LAYERS = [
  // The SDK (@keyward/sdk, sdk/src/): the plugin contracts outside authors import; the core builds its types from them.
  ['sdk', '^sdk/src/'],
  // The configuration (every variable parsed here, the OpenTelemetry ones in trace-settings.ts) and what all share.
  ['foundation', '^src/(errors|clock|log|lru|symbols|timeout|private-files|ids|node-http)\\.ts$|^src/settings/'],
  ['infrastructure', '^src/(store|kms)/'],
  // telemetry/: the tracing port and its OpenTelemetry adapter, log-trace correlation, Prometheus metrics (which meter
  // the KeyWrapper port); generic over what they wrap (no store, catalog or service import).
  ['telemetry', '^src/telemetry/'],
  // pricing/: money as integers, the price types providers declare, the price book built from their price data and
  // KEYWARD_PRICES, price dimensions and a request's worst case; the catalog (providers) reads its prices from here.
  ['pricing', '^src/pricing/'],
  ['catalog', '^src/catalog/'],
  ['accounting and controls', '^src/(accounting|controls)/'],
  ['vault', '^src/(vault|identity)/'],
  ['edge', '^src/http/'],
  ['request paths', '^src/(gateway|api)/'],
  ['roots', '^src/main\\.ts$|^src/boot/|^src/cli/'],
];

const upward = LAYERS.flatMap(([name, path], i) => {
  const higher = LAYERS.slice(i + 1).map(([, p]) => `(${p})`).join('|');
  return higher ? [{
    name: `no-import-up-from-${name.replace(/ /g, '-')}`,
    comment: `${name} may not import a higher layer`,
    severity: 'error',
    from: { path },
    to: { path: higher },
  }] : [];
});

module.exports = {
  forbidden: [
    ...upward,
    { name: 'no-cycles', severity: 'error', from: {}, to: { circular: true } },
    {
      name: 'unlayered-src-file',
      comment: 'every file under src/ belongs to a layer (add it to LAYERS in .dependency-cruiser.cjs)',
      severity: 'error',
      from: { path: '^src/', pathNot: LAYERS.map(([, p]) => `(${p})`).join('|') },
      to: {},
    },
    { name: 'api-and-gateway-apart', comment: 'the two request paths share lower layers, not each other', severity: 'error', from: { path: '^src/api/' }, to: { path: '^src/gateway/' } },
    { name: 'gateway-and-api-apart', severity: 'error', from: { path: '^src/gateway/' }, to: { path: '^src/api/' } },
    {
      name: 'stages-on-top-of-the-gateway',
      comment: "the core's stages use the gateway's other rooms (mcp, body, admission, spend host, …), never the reverse: what a stage shares lives in the room it is about",
      severity: 'error',
      from: { path: '^src/gateway/', pathNot: '^src/gateway/stages/' },
      to: { path: '^src/gateway/stages/' },
    },
    {
      name: 'sdk-stands-alone',
      comment: '@keyward/sdk is packed and installed on its own: it imports nothing but itself',
      severity: 'error',
      from: { path: '^sdk/src/' },
      to: { pathNot: '^sdk/src/' },
    },
    {
      name: 'providers-declare-only',
      comment: 'a built-in provider is written as an outside author writes one: it imports @keyward/sdk and its own lib/ (the readers and protocols it references), nothing else',
      severity: 'error',
      from: { path: '^providers/[^/]+$' },
      to: { pathNot: '^(sdk/src|providers/lib)/' },
    },
    {
      name: 'provider-lib-outside-the-core',
      comment: "what providers reference (usage readers, realtime protocols) is written against @keyward/sdk, Node's own modules and npm packages, as an outside author's would be: never the core",
      severity: 'error',
      from: { path: '^providers/lib/' },
      to: { path: '^(src|plugins|examples|providers/[^/]+$)' },
    },
    {
      name: 'plugins-use-the-contract',
      comment: 'a built-in plugin or an example imports @keyward/sdk (and Node\'s own modules) only: what it uses at run time comes from the host',
      severity: 'error',
      from: { path: '^(plugins|examples)/' },
      to: { pathNot: '^sdk/src/', dependencyTypesNot: ['core'] },
    },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    // `@keyward/sdk` resolves to its source in this repository (the `keyward-source` condition, as tsconfig.json's
    // customConditions has it): a link in node_modules to sdk/.
    enhancedResolveOptions: { conditionNames: ['keyward-source', 'import', 'default'], exportsFields: ['exports'], extensions: ['.ts', '.js', '.mjs', '.json'] },
    exclude: { path: '(^|/)(node_modules|dist)/' },
  },
};
