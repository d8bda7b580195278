/**
 * Small pieces every page uses: the error line (the API's own words), a two-step confirmation for
 * destructive actions (keyboard-reachable, focus moves to the safe choice), the copy button for a
 * value shown once, and a loader hook. No inline styles anywhere (the CSP allows none).
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from './api.js';

export function messageOf(err: unknown): string {
  if (err instanceof ApiFailure) return err.message;
  return err instanceof Error ? err.message : String(err);
}

/** An API error as the API words it; announced to screen readers. */
export function ErrorLine({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const code = error instanceof ApiFailure ? error.code : undefined;
  return (
    <p class="error" role="alert" data-code={code}>
      {messageOf(error)}
    </p>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): void;
}

/** Runs `load` now and on reload(); the last answer wins. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = []): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({ data: undefined, error: undefined, loading: true });
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => mine === generation.current && setState({ data, error: undefined, loading: false }),
      (error: unknown) => mine === generation.current && setState({ data: undefined, error, loading: false }),
    );
  }, deps);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/** A destructive action in two steps: the button, then "Confirm" / "Cancel" (focus goes to Cancel). */
export function ConfirmAction(props: { label: string; question: string; confirmLabel: string; onConfirm: () => Promise<void>; name: string }) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const cancelRef = useRef<HTMLButtonElement>(null);
  const openRef = useRef<HTMLButtonElement>(null);
  /** Cancel gives the focus back to the button that asked. */
  const refocus = useRef(false);
  useEffect(() => {
    if (asking) cancelRef.current?.focus();
    else if (refocus.current) {
      refocus.current = false;
      openRef.current?.focus();
    }
  }, [asking]);
  if (!asking) {
    return (
      <span class="confirm">
        <button type="button" class="danger" ref={openRef} aria-label={`${props.label} ${props.name}`} onClick={() => setAsking(true)}>{props.label}</button>
        <ErrorLine error={error} />
      </span>
    );
  }
  return (
    <span class="confirm asking" role="group" aria-label={props.question}>
      <span class="question">{props.question}</span>
      <button type="button" class="danger" disabled={busy} onClick={async () => {
        setBusy(true);
        setError(undefined);
        try {
          await props.onConfirm();
        } catch (err) {
          setError(err);
          setAsking(false);
        } finally {
          setBusy(false);
        }
      }}>{props.confirmLabel}</button>
      <button type="button" ref={cancelRef} onClick={() => {
        refocus.current = true;
        setAsking(false);
      }}>Cancel</button>
    </span>
  );
}

/** Copies `value` (the Clipboard API, else a selection copy where it is not offered, e.g. plain http). */
export function CopyButton({ value, label = 'Copy' }: { value: string; label?: string }) {
  const [done, setDone] = useState<string>();
  const copy = async () => {
    try {
      if (navigator.clipboard && window.isSecureContext) await navigator.clipboard.writeText(value);
      else fallbackCopy(value);
      setDone('Copied.');
    } catch {
      setDone('Copy failed: select the value and copy it yourself.');
    }
  };
  return (
    <span>
      <button type="button" onClick={copy}>{label}</button>
      <span class="note" role="status">{done}</span>
    </span>
  );
}

function fallbackCopy(value: string): void {
  const area = document.createElement('textarea');
  area.value = value;
  area.setAttribute('readonly', '');
  area.className = 'offscreen';
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('copy refused');
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section class="card">
      <h2>{title}</h2>
      {children}
    </section>
  );
}

export const shortTime = (iso: string): string => iso.replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC');
