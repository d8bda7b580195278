/** A deadline for a call to a backend that may never answer (Firestore, Cloud KMS). */
export class Timeout extends Error {
  override readonly name = 'Timeout';
}

/** `p`, or a Timeout rejection after `ms`; the timer never holds the process open. */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Timeout(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
