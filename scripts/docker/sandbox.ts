/**
 * Each build stage's filesystem, laid out and run as an image's would be, without a Docker engine.
 *
 * The replay re-runs itself in a private mount namespace (`unshare --mount`): every mount it makes there vanishes
 * when it exits, whatever happens. Each stage is an overlay whose lower layer is this machine's root and whose upper
 * layer is on a tmpfs: the stand-in for `node:24-slim` is this machine's Debian userland, Node 24 from the project's
 * own node_modules at /usr/local/bin/node (where the official image has it), and a `node` user and group, uid/gid 1000.
 * COPY writes into the stage; RUN steps run chrooted into it through `/bin/sh -c` (or their exec form), as root or the
 * stage's USER, with the stage's ENV only. What they write (`mkdir -p /data`, `chown`, the npm cache) lands in the
 * overlay: the host is never written. Linux, as root (CI and this project's machines are).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chownSync, closeSync, copyFileSync, lstatSync, mkdirSync, openSync, readFileSync, readlinkSync, realpathSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const EMULATED_BASE = 'node:24-slim';
/** The official image's PATH (docker inspect node:24-slim). */
export const IMAGE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
const NS_MARK = 'KEYWARD_DOCKER_REPLAY_NS';

export const say = (msg: string): void => void process.stderr.write(`[docker-replay] ${msg}\n`);

function sh(cmd: string, args: string[]): void {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr?.toString().trim() || `exit ${r.status}`}`);
}

/** Re-runs this process in a private mount namespace unless it already is in one; returns only inside it. */
export function enterPrivateMountNamespace(): void {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) {
    throw new Error('the replay needs Linux and root (a private mount namespace, overlayfs, chroot), as CI has');
  }
  if (process.env[NS_MARK] !== '1') {
    const r = spawnSync('unshare', ['--mount', '--propagation', 'private', process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
      stdio: 'inherit',
      env: { ...process.env, [NS_MARK]: '1' },
    });
    process.exit(r.status ?? 1);
  }
  // Never mount anything in the host's namespace: unshare ran us, so ours must differ from our parent's.
  if (readlinkSync('/proc/self/ns/mnt') === readlinkSync(`/proc/${process.ppid}/ns/mnt`)) throw new Error('not in a private mount namespace');
}

export interface RunOptions {
  env: Record<string, string>;
  /** `uid:gid` (numeric). */
  user: string;
  cwd: string;
  stdout?: number | 'pipe' | 'ignore';
  stderr?: number | 'pipe' | 'ignore';
}

export class StageRoot {
  readonly root: string;

  /** Mounts the stage: an overlay of the host's root with its upper layer on `layers` (a tmpfs). */
  constructor(layers: string, readonly name: string, nodeBinary: string) {
    this.root = path.join(layers, `${name}.root`);
    const upper = path.join(layers, `${name}.upper`);
    const work = path.join(layers, `${name}.work`);
    for (const d of [this.root, upper, work]) mkdirSync(d, { recursive: true });
    sh('mount', ['-t', 'overlay', 'overlay', '-o', `lowerdir=/,upperdir=${upper},workdir=${work}`, this.root]);
    sh('mount', ['-t', 'proc', 'proc', path.join(this.root, 'proc')]);
    sh('mount', ['--rbind', '/dev', path.join(this.root, 'dev')]);
    // The image's Node at the image's path.
    const node = this.path('/usr/local/bin/node');
    writeFileSync(node, '');
    sh('mount', ['--bind', realpathSync(nodeBinary), node]);
    this.addNodeUser();
  }

  /** The host path of a path in the image. */
  path(imagePath: string): string {
    const resolved = path.posix.resolve('/', imagePath);
    return path.join(this.root, resolved);
  }

  /** WORKDIR: the folder made if missing (owned by root, as Docker makes it). */
  mkdir(imagePath: string): void {
    mkdirSync(this.path(imagePath), { recursive: true });
  }

  isDir(imagePath: string): boolean {
    try {
      return statSync(this.path(imagePath)).isDirectory();
    } catch {
      return false;
    }
  }

  /** The official image's `node` user (uid and gid 1000, home /home/node), shadowing any host user with that id. */
  private addNodeUser(): void {
    const passwd = readFileSync(this.path('/etc/passwd'), 'utf8').split('\n').filter((l) => l && l.split(':')[2] !== '1000');
    const group = readFileSync(this.path('/etc/group'), 'utf8').split('\n').filter((l) => l && l.split(':')[2] !== '1000');
    writeFileSync(this.path('/etc/passwd'), [...passwd, 'node:x:1000:1000::/home/node:/bin/bash', ''].join('\n'));
    writeFileSync(this.path('/etc/group'), [...group, 'node:x:1000:', ''].join('\n'));
    mkdirSync(this.path('/home/node'), { recursive: true });
    chownSync(this.path('/home/node'), 1000, 1000);
  }

  /** `user`, `user:group`, `uid` or `uid:gid` → numeric `uid:gid` and home, from the stage's own /etc/passwd and /etc/group. */
  resolveUser(spec: string): { ids: string; uid: number; gid: number; home: string } {
    const [user, group] = spec.split(':') as [string, string | undefined];
    const passwd = readFileSync(this.path('/etc/passwd'), 'utf8').split('\n').map((l) => l.split(':'));
    const entry = passwd.find((f) => f[0] === user) ?? passwd.find((f) => f[2] === user);
    if (!entry && !/^[0-9]+$/.test(user)) throw new Error(`USER ${spec}: no such user in the image`);
    const uid = Number(entry?.[2] ?? user);
    let gid = Number(entry?.[3] ?? uid);
    if (group !== undefined) {
      const g = readFileSync(this.path('/etc/group'), 'utf8').split('\n').map((l) => l.split(':')).find((f) => f[0] === group || f[2] === group);
      if (!g && !/^[0-9]+$/.test(group)) throw new Error(`USER ${spec}: no such group in the image`);
      gid = Number(g?.[2] ?? group);
    }
    return { ids: `${uid}:${gid}`, uid, gid, home: entry?.[5] || '/' };
  }

  /** Copies one file or symlink from the host into the image (mode kept, owner root or `owner`), creating parents. */
  copyIn(from: string, to: string, owner?: { uid: number; gid: number }): void {
    const dest = this.path(to);
    mkdirSync(path.dirname(dest), { recursive: true });
    const st = lstatSync(from);
    if (st.isSymbolicLink()) symlinkSync(readlinkSync(from), dest);
    else copyFileSync(from, dest);
    if (owner) spawnSync('chown', ['-h', `${owner.uid}:${owner.gid}`, dest]);
  }

  /** `docker run -v <hostDir>:<to>:ro`: the host's folder, bound read-only into the image at `to`. */
  mountReadOnly(hostDir: string, to: string): void {
    const at = this.path(to);
    mkdirSync(at, { recursive: true });
    sh('mount', ['--bind', realpathSync(hostDir), at]);
    sh('mount', ['-o', 'remount,bind,ro', at]);
  }

  /** Runs argv (exec form) or a shell line in the stage, chrooted, as `user`, in `cwd`, with exactly `env`. */
  spawn(command: { argv: string[] } | { shell: string }, options: RunOptions): ChildProcess {
    // `cd` first (Docker starts every RUN and CMD in WORKDIR), then exec, so the command keeps this process's pid.
    const argv = 'argv' in command ? command.argv : ['/bin/sh', '-c', command.shell];
    return spawn('chroot', [`--userspec=${options.user}`, this.root, '/bin/sh', '-c', 'cd "$0" && exec "$@"', options.cwd, ...argv], {
      env: options.env,
      stdio: ['ignore', options.stdout ?? 'pipe', options.stderr ?? 'pipe'],
    });
  }

  /** Runs to completion with output to `logFile`; resolves with the exit code. */
  run(command: { argv: string[] } | { shell: string }, options: Omit<RunOptions, 'stdout' | 'stderr'>, logFile: string): Promise<number> {
    appendFileSync(logFile, '');
    const fd = openSync(logFile, 'a');
    const child = this.spawn(command, { ...options, stdout: fd, stderr: fd });
    return new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        closeSync(fd);
        resolve(code ?? (signal ? 128 : 1));
      });
    });
  }
}

/** A tmpfs for the stages' layers (overlayfs will not take an upper layer inside its own lower one). */
export function mountLayers(dir: string): void {
  mkdirSync(dir, { recursive: true });
  sh('mount', ['-t', 'tmpfs', '-o', 'mode=0755', 'keyward-replay', dir]);
}

/** Every mount under `dir`, innermost first (the namespace's end would do it too; this is for the folder's removal). */
export function unmountLayers(dir: string): void {
  spawnSync('umount', ['--recursive', '--lazy', dir], { stdio: 'ignore' });
}
