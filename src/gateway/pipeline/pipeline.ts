/**
 * The ordered pipeline of stages (contracts.ts): sorted once at start by
 * priority, higher first, ties in the order given (KEYWARD_PLUGINS order),
 * with each phase's hooks picked out once, so a request walks short arrays
 * and allocates nothing here.
 *
 * Promises: `access` runs the stages in order; when one refuses, every stage
 * before it that completed runs `refused` (built-ins only: may replace the
 * refusal) and `undo` in reverse order, and the refusal is rethrown. `undo`
 * (caller gone, body cut off, key not unwrapped) does the same for whatever
 * completed, once. A stage's failing `undo`, `responseHead` or `log` is logged
 * and never reaches the caller or the stages after it.
 *
 * A pooled request's attempt that may have been billed (`reattempt`): every
 * stage with the hook charges what it reserved and reserves again, in order; one
 * that does not fit makes the rest charge only, and those that reserved again
 * undo it, so a request either holds a reservation at every cap for its next
 * attempt or holds none and makes none. A failing hook counts as not fitting.
 */
import http from '../../node-http.js';
import type { Logger } from '../../log.js';
import type { ProxyStage, ResponseHead } from './contracts.js';
import type { RequestContext } from '../entry/context.js';

/** A stage as the core holds it: a built-in, or a plugin's hooks under its module's name and priority. */
export interface CoreStage extends ProxyStage<RequestContext> {
  /**
   * Built-in stages only: a later stage refused with `err` (the request is not going ahead). Returns the
   * refusal to send instead, or undefined to keep it. The abuse stage turns a failed authentication from a
   * cooling address into 429 here, so authentication still runs first and a valid token is never refused.
   */
  refused?(ctx: RequestContext, err: unknown): unknown;
}

/** Headers a stage may not set: they frame the response or are the core's own. */
const RESERVED_HEADERS = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'x-keyward-request-id']);

/** What the shared head points at between calls: a stage that kept it and writes later gets a TypeError. */
const NO_HEADERS: Record<string, string> = Object.freeze({});

/** The head handed to responseHead hooks: one per pipeline, reused (the hooks are synchronous). */
class Head implements ResponseHead {
  status = 0;
  headers = NO_HEADERS;

  setHeader(name: string, value: string): void {
    http.validateHeaderName(name);
    http.validateHeaderValue(name, value);
    const lower = name.toLowerCase();
    if (RESERVED_HEADERS.has(lower)) throw new TypeError(`a stage may not set ${lower}`);
    this.headers[lower] = value;
  }
}

export class Pipeline {
  /** Every stage, in the order access runs. */
  readonly stages: readonly CoreStage[];
  /** Stages with access, undo or refused: the ones a request passes through before forwarding. */
  private readonly requestPhase: readonly CoreStage[];
  /** Stages that reserve against a cap again for a pooled request's next attempt. */
  private readonly reattempts: readonly CoreStage[];
  private readonly heads: readonly CoreStage[];
  private readonly logs: readonly CoreStage[];
  private readonly closers: readonly CoreStage[];
  private readonly head = new Head();

  constructor(stages: readonly CoreStage[], private readonly log: Logger) {
    const names = new Set<string>();
    for (const s of stages) {
      if (names.has(s.name)) throw new Error(`two pipeline stages are named ${JSON.stringify(s.name)}`);
      names.add(s.name);
    }
    // Array.prototype.sort is stable: equal priorities keep the order given.
    this.stages = [...stages].sort((a, b) => b.priority - a.priority);
    this.requestPhase = this.stages.filter((s) => s.access || s.undo || s.refused);
    this.reattempts = this.stages.filter((s) => s.reattempt);
    this.heads = this.stages.filter((s) => s.responseHead);
    this.logs = this.stages.filter((s) => s.log);
    this.closers = this.stages.filter((s) => s.close);
  }

  has(name: string): boolean {
    return this.stages.some((s) => s.name === name);
  }

  /**
   * Runs every stage's access in order; a refusal is thrown (or the promise rejects with it) after the completed
   * stages undid theirs. While every stage answers synchronously, so does this: a promise only from the first
   * stage that returns one (a token to load, a body to read), so the usual request costs no microtask turn here.
   */
  access(ctx: RequestContext): void | Promise<void> {
    const stages = this.requestPhase;
    for (let i = 0; i < stages.length; i++) {
      const stage = stages[i]!;
      if (stage.access) {
        let pending: void | Promise<void>;
        try {
          pending = stage.access(ctx);
        } catch (err) {
          throw this.unwind(ctx, true, err);
        }
        if (pending !== undefined) return this.accessFrom(ctx, i, pending);
      }
      ctx.passed = i + 1;
    }
  }

  /** The rest of `access`, from stage `i`, whose access returned `pending`. */
  private async accessFrom(ctx: RequestContext, i: number, pending: void | Promise<void>): Promise<void> {
    const stages = this.requestPhase;
    for (; i < stages.length; i++) {
      try {
        // (stage i's own access already ran: its promise is the one handed in)
        if (pending === undefined) pending = stages[i]!.access?.(ctx);
        if (pending !== undefined) await pending;
      } catch (err) {
        throw this.unwind(ctx, true, err);
      }
      pending = undefined;
      ctx.passed = i + 1;
    }
  }

  /** Gives back what every completed stage took, in reverse order; the request is not (or no longer) forwarded. */
  undo(ctx: RequestContext): void {
    this.unwind(ctx, false, undefined);
  }

  /**
   * A pooled request's attempt may have been billed: each stage charges what it reserved for it and reserves again
   * for the next. Whether every cap took the next reservation (else none is held), at once while every stage answers
   * at once.
   */
  reattempt(ctx: RequestContext): boolean | Promise<boolean> {
    const stages = this.reattempts;
    let fits = true;
    for (let i = 0; i < stages.length; i++) {
      const answer = this.reattemptOne(stages[i]!, ctx, fits);
      if (answer instanceof Promise) return this.reattemptFrom(ctx, i, answer, fits);
      if (!answer && fits) this.undoReattempts(ctx, i);
      fits &&= answer;
    }
    return fits;
  }

  /** The rest of `reattempt`, from stage `i`, whose hook answered `pending`. */
  private async reattemptFrom(ctx: RequestContext, i: number, pending: Promise<boolean>, fits: boolean): Promise<boolean> {
    const stages = this.reattempts;
    let answer: boolean | Promise<boolean> = pending;
    for (; i < stages.length; i++) {
      const fit = await answer;
      if (!fit && fits) this.undoReattempts(ctx, i);
      fits &&= fit;
      if (i + 1 < stages.length) answer = this.reattemptOne(stages[i + 1]!, ctx, fits);
    }
    return fits;
  }

  /** One stage's reattempt hook; a throw or a rejection is logged and counts as not fitting. */
  private reattemptOne(stage: CoreStage, ctx: RequestContext, reserve: boolean): boolean | Promise<boolean> {
    const failed = (err: unknown): false => {
      this.log.warn({ err, plugin: stage.name, request_id: ctx.requestId }, 'plugin reattempt failed');
      return false;
    };
    try {
      const answer = stage.reattempt!(ctx, reserve);
      return answer instanceof Promise ? answer.then((fit) => fit === true, failed) : answer === true;
    } catch (err) {
      return failed(err);
    }
  }

  /** The stages before `end` reserved again and a cap after them did not fit: they give it back (reverse order). */
  private undoReattempts(ctx: RequestContext, end: number): void {
    for (let i = end - 1; i >= 0; i--) this.undoOne(this.reattempts[i]!, ctx);
  }

  /** A pooled request's next attempt was never sent (the caller left, or its key could not be had): what was reserved for it goes back. */
  undoReattempt(ctx: RequestContext): void {
    this.undoReattempts(ctx, this.reattempts.length);
  }

  private undoOne(stage: CoreStage, ctx: RequestContext): void {
    try {
      stage.undo?.(ctx);
    } catch (err) {
      this.log.warn({ err, plugin: stage.name, request_id: ctx.requestId }, 'plugin undo failed');
    }
  }

  /** Adds the stages' headers to `headers`, for a response head with `status` about to go out. */
  responseHead(ctx: RequestContext, status: number, headers: Record<string, string>): void {
    const head = this.head;
    head.status = status;
    head.headers = headers;
    for (const stage of this.heads) {
      try {
        stage.responseHead!(ctx, head);
      } catch (err) {
        this.log.warn({ err, plugin: stage.name, request_id: ctx.requestId }, 'plugin responseHead failed');
      }
    }
    head.headers = NO_HEADERS;
  }

  /** After the last byte: every stage's log hook, whatever happened to the request. */
  async logAll(ctx: RequestContext): Promise<void> {
    for (const stage of this.logs) {
      try {
        const pending = stage.log!(ctx);
        if (pending !== undefined) await pending;
      } catch (err) {
        this.log.warn({ err, plugin: stage.name, request_id: ctx.requestId }, 'plugin log failed');
      }
    }
  }

  async close(): Promise<void> {
    for (const stage of this.closers) {
      try {
        await stage.close!();
      } catch (err) {
        this.log.warn({ err, plugin: stage.name }, 'plugin close failed');
      }
    }
  }

  /** Reverse order over the completed stages: `refused` (for a refusal) then `undo`. Returns the refusal to send. */
  private unwind(ctx: RequestContext, refusing: boolean, err: unknown): unknown {
    const stages = this.requestPhase;
    for (let i = ctx.passed - 1; i >= 0; i--) {
      const stage = stages[i]!;
      try {
        if (refusing && stage.refused) err = stage.refused(ctx, err) ?? err;
        stage.undo?.(ctx);
      } catch (e) {
        this.log.warn({ err: e, plugin: stage.name, request_id: ctx.requestId }, 'plugin undo failed');
      }
    }
    ctx.passed = 0;
    return err;
  }
}
