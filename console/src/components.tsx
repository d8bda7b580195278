/**
 * Small pieces every page uses: a labelled field whose error shows under it in plain words (the field
 * marked `aria-invalid` and described by the message), a form's submit state (busy, the error and the
 * field it concerns, focus moved there), a form-level error line, a two-step confirmation for
 * destructive actions (keyboard-reachable, focus on the safe choice, its question wrapping inside its
 * card), a copy button, a value shown once that wraps instead of clipping, and a loader hook. No inline
 * styles anywhere (the CSP allows none).
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiFailure } from './api.js';
import { inSentence, plainError, type FormField, type PlainError } from './errors.js';

/** A refusal shown for a whole form or page (not one field), in plain words; announced to screen readers. */
export function ErrorLine({ error, fields = [] }: { error: unknown; fields?: readonly FormField[] }) {
  if (error === undefined || error === null) return null;
  const code = error instanceof ApiFailure ? error.code : undefined;
  return <p class="error" role="alert" data-code={code}>{plainError(error, fields).message}</p>;
}

/** What an input needs to be labelled, described and marked invalid. */
export interface FieldProps {
  id: string;
  'aria-describedby'?: string;
  'aria-invalid'?: 'true';
}

export function Field(props: {
  id: string; label: string; help?: string | undefined; optional?: boolean; error?: string | undefined; children: (input: FieldProps) => ComponentChildren;
}) {
  const described = [props.help ? `${props.id}-help` : '', props.error ? `${props.id}-error` : ''].filter(Boolean).join(' ');
  return (
    <div class={`field${props.error ? ' invalid' : ''}`}>
      <label for={props.id}>{props.label}{props.optional ? <span class="optional"> (optional)</span> : null}</label>
      {props.children({ id: props.id, ...(described ? { 'aria-describedby': described } : {}), ...(props.error ? { 'aria-invalid': 'true' as const } : {}) })}
      {props.error ? <p class="field-error" id={`${props.id}-error`}>{props.error}</p> : null}
      {props.help ? <small id={`${props.id}-help`}>{props.help}</small> : null}
    </div>
  );
}

export interface FormState {
  busy: boolean;
  error: PlainError | undefined;
  /** The message for `field`, when the error concerns it. */
  errorOf(field: string): string | undefined;
  /** Runs `send` (unless a required field is empty), keeping the refusal and focusing the field it concerns. */
  submit(send: () => Promise<void>, missing?: FormField): Promise<void>;
  clear(): void;
}

/** A form's submit state; `idPrefix` + `-` + the field's name is each input's id. */
export function useFormState(idPrefix: string, fields: readonly FormField[]): FormState {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<PlainError>();
  const fail = (e: PlainError) => {
    setError(e);
    if (e.field) requestAnimationFrame(() => document.getElementById(`${idPrefix}-${e.field}`)?.focus());
  };
  return {
    busy,
    error,
    errorOf: (field) => (error?.field === field ? error.message : undefined),
    clear: () => setError(undefined),
    async submit(send, missing) {
      if (missing) return fail({ field: missing.name, message: `Enter the ${inSentence(missing.label)}.` });
      setBusy(true);
      setError(undefined);
      try {
        await send();
      } catch (err) {
        fail(plainError(err, fields));
      } finally {
        setBusy(false);
      }
    },
  };
}

/** The form-level part of a form's error (one that concerns no field it shows). */
export function FormError({ state }: { state: FormState }) {
  if (!state.error || state.error.field) return null;
  return <p class="error" role="alert">{state.error.message}</p>;
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

/** A destructive action in two steps: the button, then the question with "Confirm" / "Cancel" (focus goes to Cancel). */
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
      <span class="row">
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
    </span>
  );
}

/** Copies `value` (the Clipboard API, else a selection copy where it is not offered, e.g. plain http). */
export function CopyButton({ value, label = 'Copy', describedBy }: { value: string; label?: string; describedBy?: string }) {
  const [done, setDone] = useState<string>();
  const copy = async () => {
    try {
      if (navigator.clipboard && window.isSecureContext) await navigator.clipboard.writeText(value);
      else fallbackCopy(value);
      setDone('Copied.');
    } catch {
      setDone('Copy failed: select the text and copy it yourself.');
    }
  };
  return (
    <span class="copy">
      <button type="button" onClick={copy} aria-describedby={describedBy}>{label}</button>
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

/** A value shown once (a token, a key): every character visible, wrapping at any width, selectable, with a copy button. */
export function ShownOnce({ id, label, value, copyLabel }: { id: string; label: string; value: string; copyLabel: string }) {
  const ref = useRef<HTMLElement>(null);
  useEffect(() => ref.current?.focus(), [value]);
  const select = () => {
    const range = document.createRange();
    if (ref.current) range.selectNodeContents(ref.current);
    const selection = getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
  };
  return (
    <div class="shown-once">
      <span class="label" id={`${id}-label`}>{label}</span>
      <code id={id} ref={ref} class="value" tabIndex={0} role="textbox" aria-readonly="true" aria-labelledby={`${id}-label`} onFocus={select}>{value}</code>
      <CopyButton value={value} label={copyLabel} />
    </div>
  );
}

export function Section({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="card" {...(id ? { id } : {})}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

export const shortTime = (iso: string): string => iso.replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC');

/** What an input's `onInput` hands a setter. */
export const valueOf = (e: Event): string => (e.currentTarget as HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement).value;

/** A search of a list by the start of a name (the API's `?name=`): applied on submit, cleared with one button. */
export function NameSearch({ id, value, onSearch, what }: { id: string; value: string; onSearch: (prefix: string) => void; what: string }) {
  const [text, setText] = useState(value);
  return (
    <form class="row search" role="search" aria-label={`Find ${what} by name`} onSubmit={(e) => {
      e.preventDefault();
      onSearch(text.trim());
    }}>
      <label for={id}>Name starts with</label>
      <input id={id} class="short" type="search" value={text} maxLength={64} autocomplete="off" onInput={(e) => setText(valueOf(e))} />
      <button type="submit">Find</button>
      {value ? <button type="button" onClick={() => {
        setText('');
        onSearch('');
      }}>Show all</button> : null}
    </form>
  );
}

export interface Column<T> {
  label: string;
  cell: (row: T) => ComponentChildren;
  /** The cell's class (`actions`, `mono`, `usage`, …). */
  cls?: string;
}

/**
 * A list of records as a table (at phone width, each record a card with each cell labelled: styles.css);
 * `attrs` names a row for tests and styles (`data-id`). Columns left out (`false`) are not drawn.
 */
export function RecordTable<T>({ columns, rows, attrs }: { columns: Array<Column<T> | false>; rows: T[]; attrs: (row: T) => Record<string, string> }) {
  const shown = columns.filter((c): c is Column<T> => c !== false);
  return (
    <div class="table-wrap">
      <table class="records">
        <thead><tr>{shown.map((c) => <th scope="col" key={c.label}>{c.label}</th>)}</tr></thead>
        <tbody>
          {rows.map((r) => {
            const a = attrs(r);
            return (
              <tr key={a['data-id'] ?? Object.values(a).join(' ')} {...a}>
                {shown.map((c) => <td key={c.label} data-label={c.label} {...(c.cls ? { class: c.cls } : {})}>{c.cell(r)}</td>)}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** A record's name (or "unnamed") with its id beneath: how lists show what they list. */
export function NameCell({ name, id }: { name: string | undefined; id: string }) {
  return <>{name ?? <span class="muted">unnamed</span>}<div class="sub mono">{id}</div></>;
}
