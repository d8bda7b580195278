/**
 * Test support: middleware plugins with streaming body hooks, written as plain ESM files into a fresh folder
 * (each test's own path, so no module cache carries one test's `maxBuffer` into another) and loaded the way an
 * operator loads them (KEYWARD_PLUGINS_DIR + KEYWARD_PLUGINS), in front of the proxy fixture's fake provider.
 * A hook's body is JavaScript with `piece` (a Uint8Array, or null at the end), `ctx`, `host` and `held` (a
 * per-request, per-direction array for what it holds back) in scope.
 */
import type { ExecutionContext } from 'ava';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir, type StartOptions } from './app.js';
import { proxyFixture, type ProxyFixture } from './proxy-fixture.js';

export interface HookPlugin {
  name: string;
  priority?: number;
  maxBuffer?: number;
  request?: string;
  response?: string;
}

/** A hook body that holds every piece back and gives the whole body out at the end. */
export const HOLD_ALL = 'if (piece) { held.push(Buffer.from(piece)); return ""; } const all = Buffer.concat(held); held.length = 0; return all;';

/** A hook body that replaces `from` with `to` in each piece (pieces are whole words in these tests). */
export const replace = (from: string, to: string): string =>
  `return piece ? Buffer.from(piece).toString("latin1").split(${JSON.stringify(from)}).join(${JSON.stringify(to)}) : undefined;`;

export function pluginSource(p: HookPlugin): string {
  const hook = (side: 'requestBody' | 'responseBody', body: string | undefined): string => body === undefined ? '' : `
      ${side}(piece, ctx) {
        let byRequest = state.get(ctx);
        if (!byRequest) state.set(ctx, byRequest = { requestBody: [], responseBody: [] });
        const held = byRequest.${side};
        ${body}
      },`;
  return `// A body-hook plugin written by a test.
const state = new WeakMap();
export default {
  apiVersion: 1,
  name: ${JSON.stringify(p.name)},
  priority: ${p.priority ?? 400},
  maxBuffer: ${p.maxBuffer ?? 0},
  create(host) {
    return {${hook('requestBody', p.request)}${hook('responseBody', p.response)}
    };
  },
};
`;
}

/** The proxy fixture with `plugins` loaded from a folder of their own (and the logging plugin, for its log line). */
export async function hookFixture(t: ExecutionContext, plugins: HookPlugin[], options: StartOptions = {}): Promise<ProxyFixture> {
  const dir = tempDir(t, 'keyward-hook-plugins-');
  for (const p of plugins) writeFileSync(path.join(dir, `${p.name}.js`), pluginSource(p));
  return proxyFixture(t, { ...options, env: { KEYWARD_PLUGINS_DIR: dir, KEYWARD_PLUGINS: [...plugins.map((p) => p.name), 'logging'].join(','), ...options.env } });
}
