/**
 * The deploy pages replayed as written: every shell block of docs/operate/cloud-run.md, then of the other pages that change
 * the Cloud Run service or job (docs/operate/identity.md), in one shell, top to bottom (test/support/doc-replay.ts: gcloud
 * and every other command recorded, nothing run), then the page's later deploy (its "Later deploys" section, with
 * the steps it sends the reader back to), each gcloud command applied to a model of what gcloud does to a
 * service's and a job's variables (test/support/gcloud-run-model.ts, from gcloud's own help). Fails if any command
 * loses a setting an earlier one made, if the service does not end with exactly the settings file's variables,
 * if the admin job does not run the service's image with the same settings, or if the issuer is not the address
 * the clouds can reach. A miniature of the pages before the settings file (a first deploy with --set-env-vars,
 * identity's --update-env-vars, a later deploy as the first again) shows it catches the loss.
 */
import test from 'ava';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ROOT } from '../support/app.js';
import { docsPages } from '../support/doc-pages.js';
import { laterDeploy, replay, scratchCheckout, shellBlocks, type Invocation, type Samples, type ShellBlock } from '../support/doc-replay.js';
import { applyGcloud, GcloudUsageError, isRunChange, newModel, type ContainerState, type RunModel } from '../support/gcloud-run-model.js';

const SETTINGS_FILE = 'deploy/service.env.yaml';
/** What commands the pages read into variables answer (the samples have the shape of gcloud's output). */
const SAMPLES: Samples = [
  ['projects describe', '123456789012'],
  ['builds get-default-service-account', 'projects/my-project/serviceAccounts/123456789012-compute@developer.gserviceaccount.com'],
  ['secrets versions access', 'sample-admin-token-0123456789abcdef'],
  ['addresses describe', '203.0.113.7'],
];
/** Every variable the deployment needs in its settings (the first deploy's, identity's, the load balancer's, Vertex's). */
const REQUIRED = [
  'KEYWARD_STORE', 'GOOGLE_CLOUD_PROJECT', 'KEYWARD_KMS', 'KEYWARD_KMS_KEY', 'KEYWARD_ISSUER_URL', 'KEYWARD_KMS_SIGNING_KEY',
  'KEYWARD_TRUSTED_PROXIES', 'KEYWARD_DRAIN_S', 'KEYWARD_AMBIENT_PROJECTS',
];
const CHANGES_RUN = /\bgcloud\s+(beta\s+|alpha\s+)?run\s+(deploy|services\s+update|jobs\s+(create|update|deploy|execute))\b/;

interface Page {
  file: string;
  markdown: string;
}

interface Loss {
  /** `resource container NAME`, and ` reverted to VALUE` when a command set it back to a value a later one had replaced. */
  setting: string;
  setAt: string;
  lostAt: string;
}

interface Outcome {
  model: RunModel;
  losses: Loss[];
  invocations: Invocation[];
  others: Invocation[];
  later: ShellBlock[];
  cwd: string;
  refused: string[];
}

/** Every setting of every resource and container: `service/keyward keyward KEYWARD_STORE`. */
function settingsOf(model: RunModel): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of model.resources.values()) {
    for (const [name, c] of r.containers) {
      for (const [k, v] of c.env) out.set(`${r.kind}/${r.name} ${name || '(primary)'} ${k}`, v);
      for (const [k, v] of c.secrets) out.set(`${r.kind}/${r.name} ${name || '(primary)'} secret ${k}`, v);
    }
  }
  return out;
}

/** Names a command removes on purpose (--remove-env-vars / --remove-secrets). */
function removedOnPurpose(argv: string[]): string[] {
  return argv.filter((a) => /^--remove-(env-vars|secrets)=/.test(a)).flatMap((a) => a.slice(a.indexOf('=') + 1).split(','));
}

/** The pages' sequence: the deploy page, the other pages that change the service, then the deploy page's later deploy. */
function replayPages(pages: Page[], checkoutFiles: string[]): Outcome {
  const [deployPage, ...rest] = pages;
  const blocks = [deployPage!, ...rest].flatMap((p) => shellBlocks(p.markdown, p.file));
  const deployBlocks = shellBlocks(deployPage!.markdown, deployPage!.file);
  const { section, steps } = laterDeploy(deployPage!.markdown);
  const later = [
    ...steps.flatMap((anchor) => deployBlocks.filter((b) => b.section === anchor)),
    ...deployBlocks.filter((b) => section !== undefined && b.section === section),
  ];
  const cwd = scratchCheckout(ROOT, checkoutFiles);
  const { gcloud, others } = replay([...blocks, ...later], { cwd, root: ROOT, samples: SAMPLES });
  const model = newModel();
  const losses: Loss[] = [];
  const refused: string[] = [];
  const setAt = new Map<string, string>();
  const history = new Map<string, string[]>();
  for (const inv of gcloud.filter((i) => isRunChange(i.argv))) {
    const before = settingsOf(model);
    try {
      applyGcloud(model, inv.argv, cwd);
    } catch (err) {
      if (!(err instanceof GcloudUsageError)) throw err;
      refused.push(`${inv.where}: ${err.message}`);
      continue;
    }
    const after = settingsOf(model);
    const removed = removedOnPurpose(inv.argv);
    for (const k of before.keys()) {
      const name = k.split(' ').at(-1)!;
      if (!after.has(k) && !removed.includes(name)) losses.push({ setting: k, setAt: setAt.get(k) ?? '?', lostAt: inv.where });
    }
    for (const [k, v] of after) {
      if (before.get(k) === v) continue;
      // Set back to a value it had before its latest change (a pinned secret version rotated away from, say).
      const past = history.get(k) ?? [];
      if (before.has(k) && past.slice(0, -1).includes(v)) losses.push({ setting: `${k} reverted to ${v}`, setAt: setAt.get(k) ?? '?', lostAt: inv.where });
      history.set(k, [...past, v]);
      setAt.set(k, inv.where);
    }
  }
  return { model, losses, invocations: gcloud, others, later, cwd, refused };
}

const pagesOnDisk = (): Page[] => {
  const files = docsPages();
  const read = (file: string) => ({ file, markdown: readFileSync(path.join(ROOT, file), 'utf8') });
  const others = ['README.md', ...files].filter((f) => f !== 'docs/operate/cloud-run.md').map(read).filter((p) => shellBlocks(p.markdown, p.file).some((b) => CHANGES_RUN.test(b.text)));
  // identity.md first among the others: it is where the deploy page sends the reader next.
  others.sort((a, b) => Number(b.file === 'docs/operate/identity.md') - Number(a.file === 'docs/operate/identity.md'));
  return [read('docs/operate/cloud-run.md'), ...others];
};

const primaryOf = (model: RunModel, id: string): ContainerState | undefined => {
  const r = model.resources.get(id);
  if (!r) return undefined;
  const cs = [...r.containers.values()];
  return cs.length === 1 ? cs[0] : cs.find((c) => c.port !== undefined);
};

test('the documented sequence (first deploy, identity, load balancer, a later deploy) loses no setting, and ends with the settings file, the admin job and the issuer right', (t) => {
  const pages = pagesOnDisk();
  t.deepEqual(pages.map((p) => p.file).slice(0, 2), ['docs/operate/cloud-run.md', 'docs/operate/identity.md']);
  const out = replayPages(pages, [SETTINGS_FILE]);
  t.teardown(() => rmSync(out.cwd, { recursive: true, force: true }));
  const texts = out.invocations.map((i) => i.argv.join(' '));
  // The extraction sees the sequence the issue names (so a page edit that drops a step fails here, not silently).
  t.true(texts.some((x) => x.startsWith('gcloud run deploy keyward ') && x.includes('--startup-probe=') && x.includes(`--env-vars-file=${SETTINGS_FILE}`)), 'the first deploy');
  t.true(texts.some((x) => x.startsWith('gcloud run jobs create keyward-admin ')), 'the admin job');
  t.true(texts.some((x) => x.startsWith('gcloud beta run services update keyward ') && x.includes('--no-default-url')), 'the load balancer');
  t.true(out.invocations.some((i) => i.where.startsWith('docs/operate/identity.md') && i.argv.join(' ').includes('keyward-admin') && i.argv.includes('--args=keys,rotate-signing')), 'identity: rotation through the job');
  t.true(out.later.some((b) => /gcloud run deploy keyward /.test(b.text)) && out.later.some((b) => /gcloud run jobs update keyward-admin /.test(b.text)), 'the later deploy: the service and the job');
  t.deepEqual(out.refused, [], 'gcloud would refuse none of the commands');
  for (const l of out.losses) t.log(`${l.setting}: set at ${l.setAt}, lost at ${l.lostAt}`);
  t.deepEqual(out.losses, [], 'no command loses a setting another made');

  const file = parseYaml(readFileSync(path.join(out.cwd, SETTINGS_FILE), 'utf8')) as Record<string, string>;
  for (const k of REQUIRED) t.true(k in file, `${SETTINGS_FILE} holds ${k}`);
  const service = primaryOf(out.model, 'service/keyward');
  t.truthy(service);
  t.deepEqual(Object.fromEntries(service!.env), file, 'the service ends with exactly the settings file');
  t.regex(service!.secrets.get('KEYWARD_ADMIN_TOKEN') ?? '', /^keyward-admin-token:[0-9]+$/, 'the admin token, a pinned version');

  const job = primaryOf(out.model, 'job/keyward-admin');
  t.truthy(job);
  t.is(job!.image, service!.image, 'the admin job runs the service\'s image');
  t.deepEqual(Object.fromEntries(job!.env), file, 'with the same settings');
  t.deepEqual(job!.command, ['node', '/app/dist/src/cli/main.js']);
  const executions = out.model.executions.filter((e) => e.job === 'keyward-admin');
  t.true(executions.length >= 3);
  for (const e of executions) t.regex(e.args?.[0] ?? '', /^(keys|usage|audit|org|credentials|tokens|pools|trust-policies|admin-keys|help)$/, `a keyward command: ${e.args?.join(' ')}`);
  t.deepEqual(out.others.filter((o) => ['npx', 'keyward', 'node', 'npm'].includes(o.argv[0]!)).map((o) => `${o.where}: ${o.argv.join(' ')}`), [], 'no page runs the CLI outside the job');

  // The issuer: behind the load balancer (its ingress, no run.app URL) it is the balancer's https domain.
  const settings = out.model.resources.get('service/keyward')!.settings;
  t.is(settings.get('ingress'), 'internal-and-cloud-load-balancing', 'the replay takes the load-balancer variant (its choice comes last on the page)');
  t.is(settings.get('no-default-url'), 'true');
  t.regex(file.KEYWARD_ISSUER_URL!, /^https:\/\/[^/]+$/);
  t.notRegex(file.KEYWARD_ISSUER_URL!, /\.run\.app\b/, 'not the run.app URL the load-balancer step turns off');
  t.is(file.KEYWARD_TRUSTED_PROXIES, '2', 'the load balancer appends a second address');
});

test('the repository\'s deploy/service.env.yaml is what step 7 writes with the page\'s example values', (t) => {
  const out = replayPages(pagesOnDisk(), [SETTINGS_FILE]);
  t.teardown(() => rmSync(out.cwd, { recursive: true, force: true }));
  t.is(readFileSync(path.join(ROOT, SETTINGS_FILE), 'utf8'), readFileSync(path.join(out.cwd, SETTINGS_FILE), 'utf8'));
});

test('the replay catches the pages before the settings file: a later deploy with --set-env-vars drops identity\'s variables', (t) => {
  // A miniature of docs/operate/cloud-run.md and docs/operate/identity.md as they were: step 7 set six variables with
  // --set-env-vars, identity added two with --update-env-vars, and a later deploy was "step 7 again".
  const deploy = [
    '# Keyward on Cloud Run', '', '## 7. Deploy', '', '```sh', 'export REGION=europe-west1 PROJECT_ID=my-project',
    'gcloud run deploy keyward --region="$REGION" --container=keyward --image=x --port=8080 \\',
    '  --set-env-vars="KEYWARD_STORE=firestore,GOOGLE_CLOUD_PROJECT=$PROJECT_ID" \\',
    '  --set-secrets="KEYWARD_ADMIN_TOKEN=keyward-admin-token:1" \\',
    '  --container=collector --image=y --set-secrets=/etc/rungmp/config.yaml=keyward-gmp-config:1',
    '```', '', '## Later deploys', '', 'A later deploy is [step 7](#7-deploy) again.', '',
  ].join('\n');
  const identity = [
    '# Identity', '', '```sh', 'ISSUER_URL=https://keyward-abc123-ew.a.run.app',
    'gcloud run services update keyward --region="$REGION" --update-env-vars=KEYWARD_ISSUER_URL="$ISSUER_URL"',
    'gcloud run services update keyward --region="$REGION" \\', '  --update-env-vars="^;^KEYWARD_AMBIENT_PROJECTS=$PROJECT_ID,other-project"', '```', '',
  ].join('\n');
  const out = replayPages([{ file: 'docs/operate/cloud-run.md', markdown: deploy }, { file: 'docs/operate/identity.md', markdown: identity }], []);
  t.teardown(() => rmSync(out.cwd, { recursive: true, force: true }));
  t.deepEqual(out.refused, []);
  t.deepEqual(out.losses.map((l) => [l.setting, l.setAt, l.lostAt]), [
    ['service/keyward keyward KEYWARD_ISSUER_URL', 'docs/operate/identity.md:5', 'docs/operate/cloud-run.md:7'],
    ['service/keyward keyward KEYWARD_AMBIENT_PROJECTS', 'docs/operate/identity.md:6', 'docs/operate/cloud-run.md:7'],
  ]);
  // The delimiter form kept the list whole until the later deploy dropped it; the sidecar's mount was never touched.
  t.deepEqual(Object.fromEntries(out.model.resources.get('service/keyward')!.containers.get('keyward')!.env), { KEYWARD_STORE: 'firestore', GOOGLE_CLOUD_PROJECT: 'my-project' });
  t.is(out.model.resources.get('service/keyward')!.containers.get('collector')!.secrets.get('/etc/rungmp/config.yaml'), 'keyward-gmp-config:1');
});
