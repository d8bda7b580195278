/**
 * Where the signed-in key lives: in memory, and in this tab's sessionStorage only when the operator
 * asks to stay signed in across reloads (gone when the tab closes). Never in the URL, a cookie or
 * localStorage. Signing out forgets it everywhere.
 */
const STORAGE_KEY = 'keyward.console.key';

let memoryKey: string | undefined;

export function rememberedKey(): string | undefined {
  if (memoryKey) return memoryKey;
  try {
    return sessionStorage.getItem(STORAGE_KEY) ?? undefined;
  } catch {
    return undefined;
  }
}

export function keepKey(key: string, inThisTab: boolean): void {
  memoryKey = key;
  try {
    if (inThisTab) sessionStorage.setItem(STORAGE_KEY, key);
    else sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Storage refused (a privacy mode): the key stays in memory only.
  }
}

export function forgetKey(): void {
  memoryKey = undefined;
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Nothing was stored.
  }
}

/** The key changed under the operator (the organisation token rotated here): kept where the old one was. */
export function replaceKey(key: string): void {
  memoryKey = key;
  try {
    if (sessionStorage.getItem(STORAGE_KEY) !== null) sessionStorage.setItem(STORAGE_KEY, key);
  } catch {
    // Storage refused: memory only, as before.
  }
}
