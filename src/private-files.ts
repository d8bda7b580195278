/**
 * The embedded deployment's files hold sealed keys and the key that opens them:
 * the data dir is 0700 when Keyward creates it, and the database (with its
 * -wal and -shm) and `kek` are 0600, whatever the process umask, including
 * files an earlier version left readable by others.
 */
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';

export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` (and missing parents) 0700; an existing folder is the operator's and is left as it is. */
export function ensurePrivateDir(dir: string): void {
  const created = mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  // mkdir's mode passes through the umask; say it exactly.
  if (created !== undefined) chmodSync(dir, PRIVATE_DIR_MODE);
}

/** Narrows an existing file of ours to 0600; a missing file, or one another user owns, is left alone. */
export function restrictFile(file: string): void {
  try {
    chmodSync(file, PRIVATE_FILE_MODE);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'EPERM') throw err;
  }
}

/**
 * node:sqlite takes no file mode: the database file is created 0600 before
 * SQLite opens it, and SQLite gives the -wal and -shm it creates later the
 * database file's own mode. Files already there are narrowed to 0600.
 */
export function preparePrivateDatabase(file: string): void {
  try {
    closeSync(openSync(file, 'wx', PRIVATE_FILE_MODE));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  for (const f of [file, `${file}-wal`, `${file}-shm`, `${file}-journal`]) restrictFile(f);
}
