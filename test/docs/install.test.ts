/**
 * A fresh `npm install` prints nothing a user must act on: every dependency with an install script (the lockfile
 * marks them `hasInstallScript`) is declared in package.json's `allowScripts` (npm 11.16+ lists the undeclared
 * ones after every install, and a later npm blocks them), approved where the project needs the script and denied
 * where it does nothing for it. And the README says, in its install step, why an older `node` prints engine
 * warnings and that they are harmless.
 */
import test from 'ava';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../support/app.js';

const json = (file: string) => JSON.parse(readFileSync(path.join(ROOT, file), 'utf8'));

test('every dependency with an install script is declared in allowScripts; the ones the project needs are approved', (t) => {
  const lock = json('package-lock.json') as { packages: Record<string, { hasInstallScript?: boolean }> };
  const allow = (json('package.json') as { allowScripts?: Record<string, boolean> }).allowScripts ?? {};
  const withScripts = Object.entries(lock.packages).filter(([, p]) => p.hasInstallScript).map(([where]) => where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length));
  t.true(withScripts.length > 0);
  t.deepEqual(withScripts.filter((name) => !(name in allow)), [], 'undeclared: npm would print its install-scripts notice');
  t.deepEqual(Object.keys(allow).filter((name) => !withScripts.includes(name)), [], 'declared but no longer installed with a script');
  // node's preinstall fetches the Node 24 the project runs on; esbuild and @swc/core check and place their native binaries.
  for (const needed of ['node', 'esbuild', '@swc/core']) t.is(allow[needed], true, needed);
});

test('the README\'s install step says why an older node prints engine warnings, and that they are harmless', (t) => {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const install = readme.indexOf('npm install ');
  const line = readme.split('\n').find((l) => l.includes('EBADENGINE'));
  t.truthy(line);
  t.regex(line!, /harmless/);
  t.true(readme.indexOf(line!) < install, 'before the install command');
  t.true(install - readme.indexOf(line!) < 400, 'beside it');
});
