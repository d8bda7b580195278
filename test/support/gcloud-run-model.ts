/**
 * Test support: what `gcloud run deploy`, `gcloud run services update` and `gcloud run jobs create|update|execute`
 * do to a service's or a job's environment, modelled from gcloud's own help text and code (Google Cloud SDK 528,
 * `gcloud run deploy --help`, command_lib/run/flags.py and config_changes.py), so that a documented sequence of
 * commands can be replayed against a service that keeps its state, as Cloud Run does between commands.
 *
 * What the help says, and what the model does with it (each quoted line is gcloud's):
 * - `--set-env-vars`: "List of key-value pairs to set as environment variables. All existing environment variables
 *   will be removed first."
 * - `--env-vars-file`: "Path to a local YAML file with definitions for all environment variables. All existing
 *   environment variables will be removed before the new environment variables are added." The file is read when
 *   the flag is parsed (map_util.ArgDictFile): a map, each key non-empty, without `=`, not starting X_GOOGLE_;
 *   "Environment variable values must be strings."
 * - `--update-env-vars`: "List of key-value pairs to set as environment variables." (merged into what is there)
 * - `--remove-env-vars`: "List of environment variables to be removed."
 * - `--clear-env-vars`: "Remove all environment variables."
 * - "At most one of these can be specified: --clear-env-vars, --env-vars-file, --set-env-vars" and the pair below;
 *   "Only --update-env-vars and --remove-env-vars can be used together. If both are specified, --remove-env-vars
 *   will be applied first." The same for `--clear-secrets`, `--set-secrets` ("All existing secrets will be removed
 *   first."), `--update-secrets`, `--remove-secrets`. Secrets are kept apart from literal variables
 *   (EnvVarLiteralChanges only prunes literals; a literal may not replace a variable "already set with a different
 *   type", and the reverse); keys starting with `/` are mount paths.
 * - A repeated `--set-env-vars`, `--update-env-vars` or `--remove-env-vars` adds to the earlier one
 *   (arg_parsers.UpdateAction); a repeated `--env-vars-file` replaces it.
 * - `KEY=VALUE` lists are split at `,`, or at the delimiter a leading `^X^` names (`gcloud topic escaping`); a
 *   value is everything after the item's first `=`.
 * - Containers: "Flags following --container will apply to the specified container." "If the --container flag is
 *   specified these flags may only be specified after a --container flag. Otherwise they will apply to the primary
 *   ingress container": the only container, or the one with a port (container_resource.py); a job with several
 *   containers needs --container.
 * - `gcloud run jobs execute`: "--args: If provided, an execution will be created with the input values. Otherwise,
 *   the existing arguments of the job are used." `--update-env-vars` there overrides for that execution only.
 * - Anything a command does not name is left as the service has it (a deploy of an existing service updates it).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';

export interface ContainerState {
  image: string | undefined;
  port: string | undefined;
  command: string[] | undefined;
  args: string[] | undefined;
  /** Literal environment variables. */
  env: Map<string, string>;
  /** Secrets: environment variables (`NAME`) and mounted files (`/path`), each `secret:version`. */
  secrets: Map<string, string>;
}

export interface ResourceState {
  kind: 'service' | 'job';
  name: string;
  containers: Map<string, ContainerState>;
  /** Service-level settings a command named (ingress, default URL, invoker check, service account, …): last value given. */
  settings: Map<string, string>;
}

export interface Execution {
  job: string;
  command: string[] | undefined;
  args: string[] | undefined;
  env: Map<string, string>;
}

export interface RunModel {
  resources: Map<string, ResourceState>;
  executions: Execution[];
}

/** A command gcloud itself would refuse (a usage error), with gcloud's reason. */
export class GcloudUsageError extends Error {}

export const newModel = (): RunModel => ({ resources: new Map(), executions: [] });

const key = (kind: ResourceState['kind'], name: string) => `${kind}/${name}`;

/** Flags that take no value (written `--flag`); every other flag here is `--flag=value` or `--flag value`. */
const BOOLEAN = /^--(no-)?(allow-unauthenticated|cpu-throttling|invoker-iam-check|default-url|wait|async|execute-now|clear-env-vars|clear-secrets|cpu-boost|session-affinity|use-http2|traffic|quiet|clear-volume-mounts|clear-volumes)$/;
/** Container flags (they follow --container when there is one). */
const CONTAINER_FLAGS = new Set([
  'image', 'port', 'command', 'args', 'cpu', 'memory', 'set-env-vars', 'update-env-vars', 'remove-env-vars', 'clear-env-vars', 'env-vars-file',
  'set-secrets', 'update-secrets', 'remove-secrets', 'clear-secrets', 'startup-probe', 'liveness-probe', 'depends-on', 'add-volume-mount', 'remove-volume-mount', 'clear-volume-mounts',
]);
const ENV_GROUP = ['clear-env-vars', 'env-vars-file', 'set-env-vars', 'update-env-vars|remove-env-vars'];
const SECRET_GROUP = ['clear-secrets', 'set-secrets', 'update-secrets|remove-secrets'];

interface Flag {
  name: string;
  value: string | undefined;
}

/** gcloud's ArgDict: `K=V,K2=V2`, or `^;^K=V;K2=V2` with another delimiter. */
export function parseArgDict(raw: string, flag: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const item of parseArgList(raw, flag)) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new GcloudUsageError(`argument --${flag}: Invalid flag value [${item}]`);
    out.set(item.slice(0, eq).trim(), item.slice(eq + 1));
  }
  return out;
}

/** gcloud's ArgList: split at `,` or at a `^X^` delimiter; empty items dropped at the end only. */
export function parseArgList(raw: string, flag: string): string[] {
  let delim = ',';
  let value = raw;
  if (value.startsWith('^') && value.slice(1).includes('^')) {
    [delim, value] = value.slice(1).split(/\^(.*)/s, 2) as [string, string];
    if (!delim) throw new GcloudUsageError(`argument --${flag}: Invalid delimeter.`);
  }
  if (!value) return [];
  return (value.endsWith(delim) ? value : value + delim).split(delim).slice(0, -1);
}

/** `--env-vars-file`'s file as map_util.ArgDictFile reads it (relative to the directory the command runs in). */
export function readEnvVarsFile(file: string, cwd: string): Map<string, string> {
  let data: unknown;
  try {
    data = parseYaml(readFileSync(path.resolve(cwd, file), 'utf8'));
  } catch (err) {
    throw new GcloudUsageError(`argument --env-vars-file: ${(err as Error).message}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new GcloudUsageError(`Invalid YAML/JSON data in [${file}], expected map-like data.`);
  const out = new Map<string, string>();
  for (const [k, v] of Object.entries(data)) {
    if (!k || k.includes('=') || k.startsWith('X_GOOGLE_')) throw new GcloudUsageError(`argument --env-vars-file: Invalid key [${k}]`);
    if (typeof v !== 'string') throw new GcloudUsageError(`argument --env-vars-file: Environment variable values must be strings. Found ${String(v)} (type ${v === null ? 'NoneType' : typeof v})`);
    out.set(k, v);
  }
  return out;
}

function flagsOf(argv: string[]): Flag[] {
  const flags: Flag[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) continue;
    const eq = a.indexOf('=');
    if (eq > 0) flags.push({ name: a.slice(2, eq), value: a.slice(eq + 1) });
    else if (BOOLEAN.test(a)) flags.push({ name: a.slice(2), value: undefined });
    else flags.push({ name: a.slice(2), value: argv[++i] });
  }
  return flags;
}

/** The run command argv names: [kind, verb, name] or undefined when it is no command this model knows. */
function commandOf(argv: string[]): { kind: ResourceState['kind']; verb: string; name: string } | undefined {
  // The command's words come before its first flag (the pages write every flag's value as --flag=value).
  const first = argv.findIndex((a) => a.startsWith('-'));
  const words = first < 0 ? argv : argv.slice(0, first);
  const i = words[1] === 'beta' || words[1] === 'alpha' ? 2 : 1;
  if (words[0] !== 'gcloud' || words[i] !== 'run') return undefined;
  const [a, b, c] = words.slice(i + 1);
  if (a === 'deploy' && b) return { kind: 'service', verb: 'deploy', name: b };
  if (a === 'services' && b === 'update' && c) return { kind: 'service', verb: 'update', name: c };
  if (a === 'jobs' && (b === 'create' || b === 'update' || b === 'deploy' || b === 'execute') && c) return { kind: 'job', verb: b, name: c };
  return undefined;
}

const emptyContainer = (): ContainerState => ({ image: undefined, port: undefined, command: undefined, args: undefined, env: new Map(), secrets: new Map() });

/** Whether argv is a command that changes a Cloud Run service or job (the ones this model applies). */
export const isRunChange = (argv: string[]) => commandOf(argv) !== undefined;

/**
 * Applies one command (its argv as the shell passed it to gcloud, `gcloud` first) to the model; a command this model
 * does not know is left alone. `cwd` is where a relative --env-vars-file is read from. Throws GcloudUsageError where
 * gcloud would refuse the command before calling the API, and where the API would refuse it (an update of a service
 * or job that does not exist, a create of one that does).
 */
export function applyGcloud(model: RunModel, argv: string[], cwd: string): void {
  const cmd = commandOf(argv);
  if (!cmd) return;
  const flags = flagsOf(argv);
  const id = key(cmd.kind, cmd.name);
  const existing = model.resources.get(id);
  if (cmd.verb === 'update' && !existing) throw new GcloudUsageError(`${cmd.kind} [${cmd.name}] could not be found.`);
  if (cmd.verb === 'create' && existing) throw new GcloudUsageError(`Job [${cmd.name}] already exists.`);
  if (cmd.verb === 'execute') return execute(model, cmd.name, flags);
  const resource: ResourceState = existing ?? { kind: cmd.kind, name: cmd.name, containers: new Map(), settings: new Map() };

  // Split the flags: before the first --container they are the resource's (and, with no --container at all, the primary container's).
  const scopes: Array<{ container: string | undefined; flags: Flag[] }> = [{ container: undefined, flags: [] }];
  for (const f of flags) {
    if (f.name === 'container') scopes.push({ container: f.value ?? '', flags: [] });
    else scopes.at(-1)!.flags.push(f);
  }
  const named = scopes.length > 1;
  const top = scopes[0]!;
  for (const f of top.flags) {
    if (CONTAINER_FLAGS.has(f.name)) {
      if (named) throw new GcloudUsageError(`--${f.name}: when --container is given, container flags may only be specified after a --container flag`);
    } else {
      resource.settings.set(f.name, f.value ?? 'true');
    }
  }
  const containerScopes = named ? scopes.slice(1) : [{ container: primary(resource), flags: top.flags.filter((f) => CONTAINER_FLAGS.has(f.name)) }];
  // Validate every scope before changing anything: gcloud refuses the whole command.
  const planned = containerScopes.map((s) => ({ name: s.container!, changes: containerChanges(s.flags, cwd) }));
  for (const { name, changes } of planned) {
    const c = resource.containers.get(name) ?? emptyContainer();
    changes(c);
    resource.containers.set(name, c);
  }
  if (resource.kind === 'job' && resource.containers.size > 1 && !named) throw new GcloudUsageError('the target job has multiple containers, a container name must be specified via --container flag');
  model.resources.set(id, resource);
}

/** The primary container's name: the only one, or the one with a port; '' for a resource that has none yet. */
function primary(resource: ResourceState): string {
  const names = [...resource.containers.keys()];
  if (names.length === 0) return '';
  if (names.length === 1) return names[0]!;
  if (resource.kind === 'job') throw new GcloudUsageError('the target job has multiple containers, a container name must be specified via --container flag');
  const ingress = names.find((n) => resource.containers.get(n)!.port !== undefined);
  if (ingress === undefined) throw new GcloudUsageError('missing ingress container');
  return ingress;
}

function exclusive(flags: Flag[], group: string[]): void {
  const used = group.filter((g) => g.split('|').some((name) => flags.some((f) => f.name === name)));
  if (used.length > 1) throw new GcloudUsageError(`argument ${used.map((u) => `--${u.split('|')[0]}`).join(', ')}: At most one of these can be specified.`);
}

/** One container's flags as a change to apply (parsed and checked now, as gcloud parses every flag first). */
function containerChanges(flags: Flag[], cwd: string): (c: ContainerState) => void {
  exclusive(flags, ENV_GROUP);
  exclusive(flags, SECRET_GROUP);
  const merged = (name: string, parse: (raw: string) => Map<string, string>) => {
    const out = new Map<string, string>();
    for (const f of flags.filter((x) => x.name === name)) for (const [k, v] of parse(f.value ?? '')) out.set(k, v);
    return out;
  };
  const listed = (name: string) => flags.filter((f) => f.name === name).flatMap((f) => parseArgList(f.value ?? '', name));
  const file = flags.filter((f) => f.name === 'env-vars-file').at(-1);
  const envUpdates = file ? readEnvVarsFile(file.value ?? '', cwd) : new Map([...merged('set-env-vars', (r) => parseArgDict(r, 'set-env-vars')), ...merged('update-env-vars', (r) => parseArgDict(r, 'update-env-vars'))]);
  const envClear = flags.some((f) => ['set-env-vars', 'env-vars-file', 'clear-env-vars'].includes(f.name));
  const envRemove = listed('remove-env-vars');
  const secretUpdates = new Map([...merged('set-secrets', (r) => parseArgDict(r, 'set-secrets')), ...merged('update-secrets', (r) => parseArgDict(r, 'update-secrets'))]);
  const secretClear = flags.some((f) => f.name === 'set-secrets' || f.name === 'clear-secrets');
  const secretRemove = listed('remove-secrets');
  const last = (name: string) => flags.filter((f) => f.name === name).at(-1)?.value;
  return (c) => {
    if (last('image') !== undefined) c.image = last('image');
    if (last('port') !== undefined) c.port = last('port');
    if (last('command') !== undefined) c.command = parseArgList(last('command')!, 'command');
    if (last('args') !== undefined) c.args = parseArgList(last('args')!, 'args');
    // Remove first, then update (config_changes._PruneMapping, then update).
    if (envClear) c.env.clear();
    else for (const k of envRemove) c.env.delete(k);
    if (secretClear) c.secrets.clear();
    else for (const k of secretRemove) c.secrets.delete(k);
    for (const [k, v] of envUpdates) {
      if (c.secrets.has(k)) throw new GcloudUsageError(`Cannot update environment variable [${k}] to string literal because it has already been set with a different type.`);
      c.env.set(k, v);
    }
    for (const [k, v] of secretUpdates) {
      if (!k.startsWith('/') && c.env.has(k)) throw new GcloudUsageError(`Cannot update environment variable [${k}] to the given type because it has already been set with a different type.`);
      c.secrets.set(k, v);
    }
  };
}

function execute(model: RunModel, name: string, flags: Flag[]): void {
  const job = model.resources.get(key('job', name));
  if (!job) throw new GcloudUsageError(`Job [${name}] could not be found.`);
  const container = job.containers.get(primary(job))!;
  const args = flags.filter((f) => f.name === 'args').at(-1);
  const env = new Map(container.env);
  for (const f of flags.filter((x) => x.name === 'update-env-vars')) for (const [k, v] of parseArgDict(f.value ?? '', 'update-env-vars')) env.set(k, v);
  model.executions.push({ job: name, command: container.command, args: args ? parseArgList(args.value ?? '', 'args') : container.args, env });
}
