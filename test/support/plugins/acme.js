// A provider added with no code change: one declarative file, plain ESM, dropped
// into KEYWARD_PROVIDERS_DIR (test/proxy/plugins.test.ts copies it there).
export default {
  apiVersion: 1,
  id: 'acme',
  name: 'Acme AI',
  upstream: 'https://api.acme.test',
  auth: { kind: 'header', header: 'x-acme-key' },
  headers: { 'acme-version': '2026-01-01' },
  routes: [
    { method: 'POST', path: 'v1/generate' },
    { method: 'GET', path: 'v1/models/{model}' },
  ],
};
