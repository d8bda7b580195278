/**
 * `keyward keys rotate-signing` and `keyward keys export-discovery DIR`: Keyward's own OIDC signing
 * keys (identity/signing-keys.ts), straight on the store. A rotation stores the next key: published
 * at once (every running server's JWKS has it within seconds), signing after `--activate-in` (default
 * 1h, so clouds that cache the JWKS learn it first); the previous key stays published until every
 * token it signed has expired. The export writes the two documents a static host (a public bucket)
 * serves when the gateway itself is not reachable from the clouds.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseDuration } from '../settings/config.js';
import { DEFAULT_LEAD_MS, type SigningKey } from '../identity/signing-keys.js';
import { emit, one, type Command } from './command-kit.js';
import { fields, table, UsageError } from './io.js';

const iso = (ms: number) => new Date(ms).toISOString();

function keyView(k: SigningKey, now: number): Record<string, unknown> {
  return {
    kid: k.kid, alg: k.alg, created_at: iso(k.createdAt), activates_at: iso(k.activatesAt), signing: k.activatesAt <= now,
    ...(k.kmsVersion !== undefined ? { kms_key_version: k.kmsVersion } : {}),
  };
}

export const SIGNING_KEY_COMMANDS: Command[] = [
  {
    words: ['keys', 'rotate-signing'],
    args: [],
    options: ['activate-in'],
    summary: 'add the next OIDC signing key: published at once, signing after --activate-in (default 1h)',
    details: [
      'Keyward signs the JWTs it exchanges at AWS, Entra ID and Google with this key (docs/operate/identity.md).',
      'The new key is in every server\'s JWKS within seconds and signs from --activate-in later (a',
      'duration such as 1h, the default: clouds cache the JWKS, Entra ID and Google for a time they do not',
      'publish; or 0s to sign at once: only when no cloud could have cached the JWKS).',
      'The previous key stays published until every token it signed has expired.',
      'With KEYWARD_KMS_SIGNING_KEY set, the new key is that Cloud KMS version (create it first);',
      'otherwise a new RSA key is generated and stored wrapped by the key-encryption key.',
      'Re-run `keyward keys export-discovery` after a rotation if a static host serves the JWKS.',
      'With --json: {"kid", "alg", "created_at", "activates_at", "signing", "kms_key_version"?}.',
    ].join('\n'),
    async run(ctx) {
      const raw = one(ctx, 'activate-in');
      const lead = raw === undefined ? DEFAULT_LEAD_MS : /^0[smhd]?$/.test(raw) ? 0 : parseDuration(raw);
      if (lead === undefined) throw new UsageError(`--activate-in takes a duration such as 1h or 0s, got ${JSON.stringify(raw!.slice(0, 20))}`);
      const vault = await ctx.vault();
      const key = await vault.signingKeys.rotate(lead);
      const view = keyView(key, Date.now());
      emit(ctx, view, fields([['kid', key.kid], ['published', 'now'], ['signs from', iso(key.activatesAt)], ['kms key version', key.kmsVersion]]));
    },
  },
  {
    words: ['keys', 'export-discovery'],
    args: ['<dir>'],
    options: [],
    summary: 'write .well-known/openid-configuration and .well-known/jwks.json into DIR for a static host',
    details: [
      'For a gateway the clouds cannot reach (internal ingress): upload DIR\'s .well-known folder to',
      'the static host KEYWARD_ISSUER_URL names (a public bucket), served as application/json, e.g.',
      '  gcloud storage cp --recursive --content-type=application/json --cache-control=public,max-age=60 DIR/.well-known gs://BUCKET/',
      'Run it again after every `keyward keys rotate-signing`, before the new key signs.',
      'With --json: {"issuer", "files": [...], "keys": [...]}.',
    ].join('\n'),
    async run(ctx) {
      const vault = await ctx.vault();
      const issuer = vault.issuer;
      if (!issuer) throw new UsageError('KEYWARD_ISSUER_URL is not set: it names where these documents will be served');
      const dir = path.resolve(ctx.args[0]!);
      const wellKnown = path.join(dir, '.well-known');
      mkdirSync(wellKnown, { recursive: true });
      const jwks = await issuer.jwks();
      const files = [path.join(wellKnown, 'openid-configuration'), path.join(wellKnown, 'jwks.json')];
      writeFileSync(files[0]!, JSON.stringify(issuer.discovery(), null, 2) + '\n');
      writeFileSync(files[1]!, JSON.stringify(jwks, null, 2) + '\n');
      const keys = (await vault.signingKeys.all()).filter((k) => jwks.keys.some((j) => j.kid === k.kid)).map((k) => keyView(k, Date.now()));
      emit(ctx, { issuer: issuer.url, files, keys }, `${table(['KID', 'SIGNS FROM', 'KMS KEY VERSION'], keys.map((k) => [String(k.kid), String(k.activates_at), String(k.kms_key_version ?? '')]))}\nWrote ${files.join(' and ')} for ${issuer.url}.`);
    },
  },
];
