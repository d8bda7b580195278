/**
 * Renaming a credential, token or admin key (PATCH with `{"name"}`; "Remove the name" sends null):
 * one small form under the list, focused when it opens, for all three kinds.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api } from '../api.js';
import { Field, FormError, useFormState, valueOf } from '../components.js';

export const NAME_FIELD = {
  name: 'name',
  label: 'Name',
  help: 'What you call it, shown in lists and the audit trail: up to 64 characters.',
};

export function RenameForm({ api, path, what, current, onDone, onCancel }: {
  /** `onDone`: what to tell the operator, once renamed. */
  api: Api; path: string; what: string; current: string | undefined; onDone: (notice: string) => void; onCancel: () => void;
}) {
  const [value, setValue] = useState(current ?? '');
  const form = useFormState('rename', [NAME_FIELD]);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), [path]);
  const save = (name: string | null) => form.submit(async () => {
    await api.patch(path, { name });
    onDone(name === null ? 'Name removed.' : `Renamed to "${name}".`);
  }, name === '' ? NAME_FIELD : undefined);
  return (
    <form class="stack inset" aria-label={`Rename ${what}`} noValidate onSubmit={(e) => {
      e.preventDefault();
      void save(value.trim());
    }}>
      <Field id="rename-name" label={`New name for ${what}`} help={NAME_FIELD.help} error={form.errorOf('name')}>
        {(p) => <input {...p} ref={input} value={value} maxLength={64} autocomplete="off" onInput={(e) => setValue(valueOf(e))} />}
      </Field>
      <div class="row">
        <button type="submit" disabled={form.busy}>Save name</button>
        {current !== undefined ? <button type="button" disabled={form.busy} onClick={() => void save(null)}>Remove the name</button> : null}
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
      <FormError state={form} />
    </form>
  );
}
