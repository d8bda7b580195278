/**
 * Every document operation the Firestore emulator serves, recorded with its time, as Cloud Firestore
 * bills them: a write or delete per document a commit changes; a read per document returned by a get
 * or a query (at least one per query), and per document a listener is sent that is new or changed for
 * it (the emulator sends a listener its whole result again on every write; Firestore sends only what
 * changed, and bills that). For `npm run bench -- scale`
 * (bench/scale.ts) and tests that count operations. Hooks the gRPC server's handlers (internals), as
 * firestore-emulator.ts does for atomic commits.
 */
import type { FirestoreServer } from '@firestore-emulator/server';

export interface Op {
  /** performance.now() when served. */
  t: number;
  kind: 'read' | 'write' | 'delete';
  /** The document's path below the database (`usage/org:…/shards/2026-11~inst`); for an empty query, the collection's followed by `/` (`leases/k_…/returns/`). */
  path: string;
  /** The RPC: a commit, a get (BatchGetDocuments), a query, an aggregation, or a listener's delivery. */
  via: 'commit' | 'get' | 'query' | 'aggregate' | 'listen';
}

interface Call {
  request: Record<string, unknown>;
  write(message: unknown): boolean;
}

type Handler = (call: Call, callback?: (err: unknown, value?: unknown) => void) => void;

const docPath = (name: string): string => name.replace(/^projects\/[^/]+\/databases\/[^/]+\/documents\//, '');

/** The collection a query or aggregation reads, as `path/`: what an empty answer was billed for. */
function queried(request: Record<string, unknown>): string {
  const r = request as { parent?: string; structured_query?: { from?: Array<{ collection_id?: string }> }; structured_aggregation_query?: { structured_query?: { from?: Array<{ collection_id?: string }> } } };
  const from = (r.structured_query ?? r.structured_aggregation_query?.structured_query)?.from?.[0]?.collection_id ?? '';
  return `${docPath(`${r.parent ?? ''}/`)}${from}/`.replace(/^\//, '');
}

/** Starts recording `server`'s operations into the returned array (new entries appended as they happen). */
export function recordOps(server: FirestoreServer): Op[] {
  const ops: Op[] = [];
  const handlers = (server as unknown as { server: { handlers: Map<string, { func: Handler }> } }).server.handlers;
  const wrap = (method: string, wrapFn: (inner: Handler) => Handler) => {
    const h = handlers.get(`/google.firestore.v1.Firestore/${method}`)!;
    h.func = wrapFn(h.func);
  };
  const now = () => performance.now();

  wrap('Commit', (inner) => (call, callback) => {
    const writes = (call.request as { writes: Array<{ has_delete: boolean; delete: string; update: { name: string } }> }).writes;
    inner(call, (err, value) => {
      if (!err) {
        const t = now();
        for (const w of writes) ops.push({ t, kind: w.has_delete ? 'delete' : 'write', path: docPath(w.has_delete ? w.delete : w.update.name), via: 'commit' });
      }
      callback!(err, value);
    });
  });
  wrap('BatchGetDocuments', (inner) => (call) => {
    const t = now();
    for (const name of (call.request as { documents: string[] }).documents) ops.push({ t, kind: 'read', path: docPath(name), via: 'get' });
    inner(call);
  });
  const counted = (method: string, via: Op['via'], docOf: (message: Record<string, unknown>) => { name: string; version?: string } | undefined, minimumOne: boolean) =>
    wrap(method, (inner) => (call) => {
      let n = 0;
      /** What this call already sent, by document, with its version: sent again unchanged, it costs nothing. */
      const sent = new Map<string, string>();
      const write = call.write.bind(call);
      call.write = (message: unknown) => {
        const doc = docOf(message as Record<string, unknown>);
        const name = doc?.name;
        if (doc && name !== undefined && !(doc.version !== undefined && sent.get(name) === doc.version)) {
          if (doc.version !== undefined) sent.set(name, doc.version);
          n++;
          ops.push({ t: now(), kind: 'read', path: docPath(name), via });
        }
        return write(message);
      };
      inner(call);
      if (minimumOne && n === 0) ops.push({ t: now(), kind: 'read', path: queried(call.request), via });
    });
  interface Doc { name?: string; update_time?: { seconds?: number; nanos?: number } }
  const named = (doc: Doc | undefined, versioned: boolean) =>
    doc?.name ? { name: doc.name, ...(versioned ? { version: `${doc.update_time?.seconds ?? 0}.${doc.update_time?.nanos ?? 0}` } : {}) } : undefined;
  counted('RunQuery', 'query', (m) => named((m as { document?: Doc }).document, false), true);
  counted('RunAggregationQuery', 'aggregate', () => undefined, true);
  counted('Listen', 'listen', (m) => named((m as { document_change?: { document?: Doc } }).document_change?.document, true), false);
  return ops;
}
