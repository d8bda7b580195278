/**
 * The built image run as Cloud Run runs it (`docker run` with `-e` overrides): the last stage's CMD, as its USER, in
 * its WORKDIR, with its ENV, then the checks Cloud Run relies on: the listening line, the first steps it logs (the
 * console's URL, and the command that makes an organisation, run as printed), /healthz and /readyz, an admin
 * round trip that writes the data folder as the unprivileged user, the console from dist/console, /metrics absent
 * from the public port and served on the loopback metrics port (KEYWARD_METRICS_PORT, which the image sets), the
 * lazily loaded Firestore and Cloud KMS adapters resolving from production dependencies only, no dev dependency in
 * the image, and SIGTERM → drain → exit 0 with no stored secret in the logs.
 */
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { once } from 'node:events';
import type { Stage } from './dockerfile.js';
import { say, type StageRoot } from './sandbox.js';

/** A stage as built: its filesystem and the state its last instruction left (what `docker run` starts from). */
export interface BuiltStage {
  stage: Stage;
  root: StageRoot;
  env: Record<string, string>;
  user: string;
  workdir: string;
}

const SECRET = 'sk-replay-0123456789abcdef';

export function check(ok: unknown, what: string): void {
  if (!ok) throw new Error(what);
}

/** The first log line whose message is `message` (or that `message` matches), waited for. */
export async function waitForLine(lines: string[], message: string | ((o: Record<string, unknown>) => boolean), exited: () => boolean, timeoutMs: number): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    for (const l of lines) {
      try {
        const o = JSON.parse(l) as Record<string, unknown>;
        if (typeof message === 'function' ? message(o) : o.message === message) return o;
      } catch { /* not JSON */ }
    }
    if (exited()) throw new Error(`the server exited before logging "${message}"`);
    if (Date.now() > deadline) throw new Error(`no "${message}" line within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function json(res: Response, what: string): Promise<Record<string, unknown>> {
  check(res.ok, `${what}: ${res.status} ${await res.clone().text()}`);
  return (await res.json()) as Record<string, unknown>;
}

/** The image's CMD started (`docker run`), its JSON log lines collected as they come (and written to `logFile`). */
export function startServer(image: BuiltStage, env: Record<string, string>, logFile: string) {
  const user = image.root.resolveUser(image.user);
  const server = image.root.spawn({ argv: image.stage.cmd! }, { env, user: user.ids, cwd: image.workdir });
  const lines: string[] = [];
  let stderr = '';
  let buffered = '';
  const out = createWriteStream(logFile);
  server.stdout!.on('data', (d: Buffer) => {
    out.write(d);
    buffered += d.toString();
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    lines.push(...parts);
  });
  server.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exit = once(server, 'exit') as Promise<[number | null, string | null]>;
  let exited = false;
  void exit.then(() => (exited = true));
  return { server, lines, stderr: () => stderr, exited: () => exited, exit, out };
}

export async function runImage(image: BuiltStage, logDir: string, contextDir: string): Promise<void> {
  const { stage, root } = image;
  check(stage.cmd, 'the last stage has no CMD');
  // One setting, two launchers: the image runs Node with the V8 flags `npm start` uses.
  const start = (JSON.parse(readFileSync(path.join(contextDir, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start;
  check(start === stage.cmd!.join(' '), `package.json's start script (${start}) and the Dockerfile's CMD (${stage.cmd!.join(' ')}) differ`);
  check(stage.expose.includes(Number(image.env.PORT)), `EXPOSE ${stage.expose.join(' ')} does not include the image's PORT ${image.env.PORT}`);
  check(image.env.KEYWARD_METRICS_PORT !== undefined, 'the image does not set KEYWARD_METRICS_PORT: /metrics would be public');
  for (const dev of ['typescript', 'ava', 'tsx', '@firestore-emulator/server', 'node']) {
    check(!existsSync(root.path(path.posix.join(image.workdir, 'node_modules', dev))), `a dev dependency (${dev}) is in the image`);
  }
  const user = root.resolveUser(image.user);
  check(user.uid !== 0, 'the image runs as root');

  // `docker run -e …`: loopback ports picked by the kernel (the replay shares this machine's network), an admin token.
  const adminToken = `replay-admin-token-${Math.random().toString(36).slice(2)}${Date.now()}`;
  const env = { HOME: user.home, ...image.env, HOST: '127.0.0.1', PORT: '0', KEYWARD_METRICS_PORT: '0', KEYWARD_ADMIN_TOKEN: adminToken };
  say(`running ${stage.cmd!.join(' ')} as ${image.user} (${user.ids}) in ${image.workdir}`);
  const { server, lines, stderr, exited, exit, out } = startServer(image, env, path.join(logDir, 'server.out'));
  try {
    const listening = await waitForLine(lines, 'listening', exited, 15_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${stderr()}`);
    });
    const base = `http://127.0.0.1:${String(listening.port)}`;
    const metricsLine = await waitForLine(lines, 'metrics listening', exited, 5_000);
    check(metricsLine.address === '127.0.0.1', `the metrics listener is bound to ${String(metricsLine.address)}`);
    // The image's process is the CMD itself (Node as PID 1 in the container), as the image's user.
    const status = readFileSync(`/proc/${server.pid}/status`, 'utf8');
    check(new RegExp(`^Uid:\\s+${user.uid}\\s`, 'm').test(status), `the server does not run as uid ${user.uid}`);
    const cmdline = readFileSync(`/proc/${server.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    check(cmdline.join(' ') === stage.cmd!.join(' '), `the server process is \`${cmdline.join(' ')}\`, not the CMD itself`);

    // The first steps: the console's URL, and (an empty /data) the command that makes an organisation, run as printed.
    await waitForLine(lines, `console: ${base}/console/`, exited, 5_000);
    const firstOrg = await waitForLine(lines, (o) => typeof o.command === 'string', exited, 5_000);
    check(firstOrg.command === 'node dist/src/cli/main.js org create <name>', `the first-organisation notice names ${JSON.stringify(firstOrg.command)}`);
    const made = await root.run({ argv: String(firstOrg.command).replace('<name>', 'replay-cli').split(' ') }, { env, user: user.ids, cwd: image.workdir }, path.join(logDir, 'org-create.log'));
    check(made === 0 && /otok_/.test(readFileSync(path.join(logDir, 'org-create.log'), 'utf8')), 'the printed command did not make an organisation in the image');

    check((await fetch(`${base}/healthz`)).status === 200, '/healthz is not 200');
    check((await fetch(`${base}/readyz`)).status === 200, '/readyz is not 200');
    const org = await json(await fetch(`${base}/v1/orgs`, { method: 'POST', headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' }, body: '{"name":"replay"}' }), 'POST /v1/orgs');
    const cred = await json(await fetch(`${base}/v1/credentials`, { method: 'POST', headers: { authorization: `Bearer ${String(org.token)}`, 'content-type': 'application/json' }, body: JSON.stringify({ provider: 'openai', api_key: SECRET }) }), 'POST /v1/credentials');
    check((await fetch(`${base}/v1/credentials/${String(cred.id)}`, { headers: { authorization: `Bearer ${String(org.token)}` } })).status === 200, 'GET /v1/credentials/:id');
    check((await fetch(`${base}/v1/openapi.json`)).status === 200, '/v1/openapi.json is not 200');
    const consoleRes = await fetch(`${base}/console`);
    check(consoleRes.ok && (consoleRes.headers.get('content-security-policy') ?? '').startsWith("default-src 'self'"), 'GET /console: not served with a strict CSP');
    const script = /\/console\/console\.[A-Za-z0-9]+\.js/.exec(await consoleRes.text())?.[0];
    check(script && (await fetch(`${base}${script}`)).status === 200, "the console's script is not served");
    // /metrics: not on the public port by default; on the loopback metrics port for a sidecar.
    check((await fetch(`${base}/metrics`)).status === 404, 'GET /metrics on the public port is not 404');
    const scraped = await fetch(`http://127.0.0.1:${String(metricsLine.port)}/metrics`);
    check(scraped.status === 200 && /^keyward_/m.test(await scraped.text()), 'the loopback metrics port does not serve /metrics');
    say('health, admin round trip, console, metrics ok');

    // The Cloud Run adapters are imported lazily: they must load and build their clients from production dependencies.
    const adapters = await root.run({
      argv: ['node', '--input-type=module', '-e', [
        "const { FirestoreStore } = await import('./dist/src/store/firestore/firestore-store.js');",
        "const { GcpKeyWrapper } = await import('./dist/src/kms/gcp.js');",
        "const store = await FirestoreStore.connect({ gcpProject: 'replay', firestoreEmulatorHost: '127.0.0.1:9' });",
        "const kms = await GcpKeyWrapper.connect({ kmsKey: 'projects/p/locations/l/keyRings/r/cryptoKeys/k', kmsEndpoint: '127.0.0.1:9' });",
        'await store.close(); await kms.close();',
      ].join('\n')],
    }, { env, user: user.ids, cwd: image.workdir }, path.join(logDir, 'adapters.log'));
    check(adapters === 0, `the Firestore / Cloud KMS adapters do not load in the image:\n${readFileSync(path.join(logDir, 'adapters.log'), 'utf8')}`);

    server.kill('SIGTERM');
    const [code] = await exit;
    check(code === 0, `SIGTERM: exit ${code}, expected 0\n${stderr()}`);
    check(lines.some((l) => l.includes('"message":"stopped"')), 'no "stopped" line after SIGTERM');
    check(!lines.join('\n').includes(SECRET) && !stderr().includes(SECRET), 'the stored key appeared in the logs');
    check(!lines.some((l) => /otok_[A-Za-z0-9]/.test(l)), 'an organisation token appeared in the server\'s logs');
    say('adapters load; SIGTERM → exit 0');
  } finally {
    if (!exited()) server.kill('SIGKILL');
    out.end();
  }
}
