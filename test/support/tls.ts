/**
 * Test support: a throw-away certificate authority and a server certificate it
 * signed for 127.0.0.1 and localhost (openssl), written to a temp folder, for
 * the gateway's own TLS (KEYWARD_TLS_CERT / KEYWARD_TLS_KEY) and clients that
 * trust only that CA.
 */
import type { ExecutionContext } from 'ava';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from './app.js';

export interface TestPki {
  /** PEM of the CA certificate: what a client trusts. */
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
  certFile: string;
  keyFile: string;
  caFile: string;
}

export function testPki(t: ExecutionContext): TestPki {
  const dir = tempDir(t, 'keyward-pki-');
  const f = (name: string) => path.join(dir, name);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'pipe' });
  ssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.pem'), '-days', '2', '-subj', '/CN=Keyward test CA');
  ssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
  ssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.pem'), '-days', '2', '-extfile', f('ext.cnf'));
  return {
    ca: readFileSync(f('ca.pem')), cert: readFileSync(f('server.pem')), key: readFileSync(f('server.key')),
    certFile: f('server.pem'), keyFile: f('server.key'), caFile: f('ca.pem'),
  };
}
