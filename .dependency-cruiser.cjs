/**
 * Folders point one way (design.md, "Folders that point one way"): a layer may import
 * from its own layer or a lower one, never up, and nothing may form a cycle. Checked in
 * `npm test` (`npm run lint:deps`). Parsed with swc: TypeScript 7 has no JS compiler API
 * dependency-cruiser can load, and type-only imports count as dependencies too.
 */
const LAYERS = [
  // telemetry/: the tracing port and its OpenTelemetry adapter, generic over what it wraps (no store or KMS import).
  ['foundation', '^src/(errors|clock|log|config|federation-config|symbols|trace|timeout|private-files|ids|tls-settings|node-http)\.ts$|^src/telemetry/'],
  ['infrastructure', '^src/(store|kms)/'],
  ['catalog', '^src/catalog/'],
  ['accounting and controls', '^src/(accounting|controls)/'],
  ['vault', '^src/(vault|identity)/'],
  ['edge', '^src/http/|^src/metrics\\.ts$'],
  ['request paths', '^src/(gateway|api)/'],
  ['roots', '^src/(container|adapters|main|serve|first-steps|warm-compile-cache)\\.ts$|^src/cli/'],
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
      name: 'providers-declare-only',
      comment: 'a provider file is declarative: it may use the catalog contract and foundation, nothing else of src/',
      severity: 'error',
      from: { path: '^providers/' },
      to: { path: '^src/', pathNot: '^src/catalog/|^src/(errors|ids)\\.ts$' },
    },
    {
      name: 'plugins-use-the-contract',
      comment: 'a middleware plugin sees the stage contract, the catalog and foundation, never the container or services',
      severity: 'error',
      from: { path: '^plugins/' },
      to: { path: '^src/', pathNot: '^src/gateway/contracts\\.ts$|^src/catalog/|^src/(errors|trace|ids|config)\\.ts$' },
    },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
  },
};
