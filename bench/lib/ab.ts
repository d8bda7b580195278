/**
 * Comparing builds: the variants an A/B run measures side by side, each its own process on the same fake
 * provider, with the bare Node proxy first as the yardstick. A variant is
 *   <dist dir>[,VAR=value…]   a build of Keyward (its src/main.js), with environment overrides; a piece without
 *                             `=` continues the previous value (dist,KEYWARD_PLUGINS=logging,team-header); the
 *                             pseudo-variable @log=FILE sends its stdout there instead of a file in the temp dir
 *   floor:<parts>             bench/lib/floor-proxy.mjs with those parts (hp3,hash,log,metrics,mask): what the pieces
 *                             Keyward cannot drop cost before any of its own code runs
 * Keep a copy of a build inside the repo and named dist (mkdir -p bench/.ab/base && cp -r dist bench/.ab/base/dist):
 * it resolves node_modules and its providers/ and plugins/ from there.
 */
import path from 'node:path';
import type { Target } from './load.js';
import type { Session } from './paths.js';
import { ROOT, provision, startBare, startFloor, startKeyward, type Proc } from './servers.js';
import { BODY, KEY } from './settings.js';

export interface Variant {
  name: string;
  proc: Proc;
  target: Target;
}

/** Starts the bare proxy and every variant of `specs` on the fake provider; `extra` headers go on every request. */
export async function startVariants(s: Session, fake: Proc, specs: string[], extra: Record<string, string>): Promise<Variant[]> {
  const { tmp } = s;
  const variants: Variant[] = [];
  const bare = s.add(await startBare(fake.port, KEY));
  let ptok = '';
  const floors: string[] = [];
  for (const [i, spec] of specs.entries()) {
    // floor:<parts>: bench/lib/floor-proxy.mjs, the pieces Keyward cannot drop without its own code (started after the token exists).
    if (spec.startsWith('floor:')) {
      floors.push(spec);
      continue;
    }
    // A variant is a dist folder, optionally with environment overrides: dist,KEYWARD_LOG_LEVEL=warn
    // (a piece without `=` continues the previous value: dist,KEYWARD_PLUGINS=logging,team-header)
    const [d, ...pieces] = spec.split(',');
    const envPairs: string[] = [];
    for (const p of pieces) {
      if (p.includes('=') || envPairs.length === 0) envPairs.push(p);
      else envPairs[envPairs.length - 1] += `,${p}`;
    }
    // (the pseudo-variable @log=FILE sends Keyward's stdout there instead of a file in the temp dir)
    const env = Object.fromEntries(envPairs.map((p) => [p.slice(0, p.indexOf('=')), p.slice(p.indexOf('=') + 1)] as [string, string]));
    const logFile = env['@log'] ?? path.join(tmp, `k${i}.log`);
    delete env['@log'];
    const k = s.add(await startKeyward(path.join(tmp, `data${i}`), fake.port, logFile, { main: path.resolve(ROOT, d!, 'src/main.js'), env }));
    ptok = await provision(`http://127.0.0.1:${k.port}`, KEY);
    variants.push({ name: spec, proc: k, target: { url: `http://127.0.0.1:${k.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': ptok, ...extra }, body: BODY } });
  }
  for (const [i, spec] of floors.entries()) {
    const f = s.add(await startFloor(fake.port, KEY, spec.slice('floor:'.length), path.join(tmp, `floor${i}.log`)));
    variants.push({ name: spec, proc: f, target: { url: `http://127.0.0.1:${f.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': ptok || 'ptok_floor', ...extra }, body: BODY } });
  }
  variants.unshift({ name: 'bare', proc: bare, target: { url: `http://127.0.0.1:${bare.port}/v1/proxy/v1/chat/completions`, headers: { 'x-proxy-token': ptok, ...extra }, body: BODY } });
  return variants;
}
