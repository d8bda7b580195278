/**
 * Which store and key wrapper a `keyward` command opens, said on stderr in one line before it opens them, and the
 * one mistake refused before anything is opened: a shell holding a deployment's cloud settings but no
 * KEYWARD_STORE. Without that variable the CLI opens SQLite in KEYWARD_DATA_DIR (./data), so `keys rotate-signing`
 * or `keys export-discovery` run with only KEYWARD_ISSUER_URL exported would make a fresh local signing key and
 * publish a JWKS the deployment never signs with. The line names places only (a path, a project, a key name,
 * a URL), never a secret: a local KEK given in the environment is named by its variable, not shown.
 *
 * In a Cloud Run job (CLOUD_RUN_JOB set: docs/operate/cloud-run.md's `keyward-admin`), output goes to Cloud Logging, so a
 * command that prints a new secret or reads one from stdin is refused there: those go through the HTTP API.
 */
import path from 'node:path';
import type { Config } from '../settings/config.js';

/** Variables that only a deployment's settings hold: with any of them set, the store must be named. */
const CLOUD_SETTING = /^(KEYWARD_ISSUER_URL|KEYWARD_KMS_.+|FIRESTORE_.+|GOOGLE_CLOUD_PROJECT)$/;

/** Undefined when the store is named or no cloud setting is present; else the usage error's message. */
export function unnamedStore(env: Record<string, string | undefined>): string | undefined {
  if (present(env.KEYWARD_STORE)) return undefined;
  const cloud = Object.keys(env).filter((name) => CLOUD_SETTING.test(name) && present(env[name])).sort();
  if (cloud.length === 0) return undefined;
  return `KEYWARD_STORE is not set, but ${cloud.join(', ')} ${cloud.length === 1 ? 'is' : 'are'}: that is a deployment's settings, and without `
    + 'KEYWARD_STORE this command would open a local SQLite store in KEYWARD_DATA_DIR instead of the deployment\'s. '
    + 'Set KEYWARD_STORE (firestore for a deployment; sqlite to use a local store on purpose). '
    + 'Against a deployment, run admin commands as its Cloud Run job (docs/operate/cloud-run.md, "Admin commands")';
}

/** Commands whose output holds a new secret (a token or key), or that read one from stdin. */
const SECRET_IO = new Set(['org create', 'tokens create', 'admin-keys create', 'credentials create', 'credentials rotate']);

/** Undefined when the command may run here; else the usage error's message (a secret-bearing command in a Cloud Run job). */
export function refusedInJob(words: readonly string[], env: Record<string, string | undefined>): string | undefined {
  const command = words.join(' ');
  if (!present(env.CLOUD_RUN_JOB) || !SECRET_IO.has(command)) return undefined;
  return `${command} is not run in a Cloud Run job (${env.CLOUD_RUN_JOB}): its output goes to Cloud Logging, and this command `
    + `${command.startsWith('credentials') ? 'reads a key from stdin, which a job has not got' : 'prints a new secret'}. Use the HTTP API with the admin token or an org token`;
}

/** `store sqlite /abs/data/keyward.db, key local /abs/data/kek` or `store firestore project p, key gcp projects/…`. */
export function openedStore(config: Config): string {
  const parts = [storePart(config), keyPart(config)];
  if (config.issuerUrl !== undefined) parts.push(`issuer ${config.issuerUrl}`);
  if (config.kmsSigningKey !== undefined) parts.push(`signing key gcp ${config.kmsSigningKey}`);
  return parts.join(', ');
}

function storePart(config: Config): string {
  if (config.store === 'sqlite') return `store sqlite ${path.join(config.dataDir, 'keyward.db')}`;
  // As the Firestore client is given it (store/firestore/db.ts): the emulator's default project, else the metadata server's.
  const project = config.gcpProject ?? (config.firestoreEmulatorHost ? 'keyward-local' : '(the metadata server\'s)');
  return `store firestore project ${project}${config.firestoreEmulatorHost ? ` emulator ${config.firestoreEmulatorHost}` : ''}`;
}

function keyPart(config: Config): string {
  if (config.kms === 'gcp') return `key gcp ${config.kmsKey}${config.kmsEndpoint ? ` endpoint ${config.kmsEndpoint}` : ''}`;
  return config.localKek ? 'key local KEYWARD_LOCAL_KEK' : `key local ${path.join(config.dataDir, 'kek')}`;
}

function present(value: string | undefined): boolean {
  return value !== undefined && value !== '';
}
