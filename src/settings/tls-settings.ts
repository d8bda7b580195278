/**
 * KEYWARD_TLS_CERT / KEYWARD_TLS_KEY: the gateway serves TLS itself (for
 * clients that dial only `https:`/`wss:` and deployments without a TLS front).
 * Both PEM files or neither; each must be readable and hold PEM, read once at
 * start (the TLS layer checks that the key matches the certificate when the
 * server starts). The key is a secret: it never reaches PluginConfig or a log.
 */
import { readFileSync } from 'node:fs';

export interface TlsSettings {
  readonly cert: Buffer;
  readonly key: Buffer;
}

export function parseTlsSettings(get: (name: string) => string | undefined, fail: (variable: string, accepts: string, got: string) => never): TlsSettings | undefined {
  const certPath = get('KEYWARD_TLS_CERT');
  const keyPath = get('KEYWARD_TLS_KEY');
  if (certPath === undefined && keyPath === undefined) return undefined;
  const read = (name: string, file: string | undefined, marker: RegExp): Buffer => {
    if (file === undefined) return fail(name, 'a PEM file, set together with KEYWARD_TLS_CERT and KEYWARD_TLS_KEY', '');
    let pem: Buffer;
    try {
      pem = readFileSync(file);
    } catch (err) {
      return fail(name, `a readable PEM file (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`, file);
    }
    if (!marker.test(pem.toString('latin1'))) fail(name, 'a PEM file', file);
    return pem;
  };
  return Object.freeze({
    cert: read('KEYWARD_TLS_CERT', certPath, /-----BEGIN CERTIFICATE-----/),
    key: read('KEYWARD_TLS_KEY', keyPath, /-----BEGIN [A-Z ]*PRIVATE KEY-----/),
  });
}
