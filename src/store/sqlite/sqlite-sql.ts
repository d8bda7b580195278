/**
 * What the SQLite store's parts (audit, secrets) need of its connection: cached
 * statements and one write transaction. The store hands its own plumbing over,
 * so every part shares one connection, one statement cache and one error policy.
 */
import type { SQLInputValue } from 'node:sqlite';

export type Row = Record<string, SQLInputValue>;

export interface Sql {
  one(sql: string, ...params: SQLInputValue[]): Row | undefined;
  all(sql: string, ...params: SQLInputValue[]): Row[];
  /** Returns the number of rows changed. */
  run(sql: string, ...params: SQLInputValue[]): number;
  /** Runs `fn` in one BEGIN IMMEDIATE transaction. */
  tx<T>(fn: () => T): T;
}
