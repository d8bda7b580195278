/**
 * Minting a proxy token and using it: the form (a credential picked by its name and provider, a name
 * for the token, its lifetime and every limit the API takes; an empty field is left out), then the new
 * token shown once with what its provider's SDKs need: the environment variables (or the code) the
 * provider file declares, filled with this gateway's proxy URL, the token and the credential's plain
 * fields, each block copyable and wrapping at any width. Shared by the Tokens page and the first-run guide.
 */
import { useState } from 'preact/hooks';
import type { Api, Credential, Provider, SdkSetup, Token } from '../api.js';
import { CopyButton, Field, FormError, ShownOnce, useFormState, valueOf } from '../components.js';
import type { FormField } from '../errors.js';
import { credentialLabel } from '../format.js';

const listOfWords = (text: string): string[] => text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);

/** The mint body from the form: the fields filled in, numbers as numbers. */
export function mintBody(form: Record<string, string>): Record<string, unknown> {
  const bound = form.credential_id?.trim() ?? '';
  // A pool (Pools page) is minted for by its id, as `pool_id`.
  const body: Record<string, unknown> = { [bound.startsWith('pool_') ? 'pool_id' : 'credential_id']: bound, ttl: form.ttl?.trim() ?? '' };
  if (form.name?.trim()) body.name = form.name.trim();
  if (form.models?.trim()) body.models = listOfWords(form.models);
  if (form.paths?.trim()) body.paths = listOfWords(form.paths);
  // Sent as typed when not a plain integer: the API's refusal, in plain words, says what it takes.
  const integer = (v: string) => (/^\d+$/.test(v.trim()) ? Number(v.trim()) : v.trim());
  if (form.max_requests?.trim()) body.max_requests = integer(form.max_requests);
  if (form.rate_limit?.trim()) body.rate_limit = integer(form.rate_limit);
  if (form.budget_usd?.trim()) body.budget_usd = form.budget_usd.trim();
  if (form.tools?.trim()) body.tools = listOfWords(form.tools);
  if (form.tokens_per_minute?.trim()) body.tokens_per_minute = integer(form.tokens_per_minute);
  if (form.max_concurrent?.trim()) body.max_concurrent = integer(form.max_concurrent);
  return body;
}

export const MINT_FIELDS: Array<FormField & { placeholder?: string }> = [
  { name: 'credential_id', label: 'Credential' },
  { name: 'name', label: 'Name', help: 'What the token is for, such as evals agent: the lists and the audit trail show it.' },
  { name: 'ttl', label: 'Lifetime', help: 'A number and a unit: s, m, h or d. For example 15m, 12h or 7d.' },
  { name: 'models', label: 'Models', help: 'Only these models: exact names, or a prefix ending in *, separated by spaces.', placeholder: 'gpt-4o-mini claude-sonnet-4*' },
  { name: 'paths', label: 'Paths', help: 'Only these provider paths, separated by spaces.', placeholder: 'v1/chat/completions' },
  { name: 'max_requests', label: 'Most requests', help: 'How many requests the token may make in its life.' },
  { name: 'rate_limit', label: 'Requests per minute', help: 'At most this many requests a minute.' },
  { name: 'budget_usd', label: 'Budget in USD', help: 'The most its requests may cost over its life, such as 5.00.' },
  { name: 'tools', label: 'Tools', help: 'MCP servers only: the tools it may call, exact names or a prefix ending in *, separated by spaces. Others are refused and hidden from its tool list.', placeholder: 'get_issue list_*' },
  { name: 'tokens_per_minute', label: 'Tokens per minute', help: 'At most this many input and output tokens in any minute, across every instance.' },
  { name: 'max_concurrent', label: 'Requests at once', help: 'At most this many requests or streams open at the same time, across every instance.' },
];
const field = (name: string) => MINT_FIELDS.find((f) => f.name === name)!;

export function MintForm({ api, credentials, minterIds, providers, preselect, onMinted }: {
  api: Api; credentials: Credential[] | undefined; minterIds: string[] | undefined; providers: Provider[]; preselect?: string | undefined;
  onMinted: (t: Token) => void;
}) {
  const choices = credentials ? credentials.map((c) => ({ id: c.id, label: credentialLabel(c, providers) })) : (minterIds ?? []).map((id) => ({ id, label: id }));
  const [form, setForm] = useState<Record<string, string>>({ ttl: '1h', credential_id: preselect ?? choices[0]?.id ?? '' });
  const state = useFormState('mint', MINT_FIELDS);
  // The tools field is for an MCP server's credential (or when the credential's provider is not known here).
  const picked = credentials?.find((c) => c.id === form.credential_id);
  const mcp = !credentials || providers.find((p) => p.id === picked?.provider)?.kind === 'mcp';
  const set = (name: string) => (e: Event) => setForm({ ...form, [name]: (e.currentTarget as HTMLInputElement).value });
  const submit = (e: Event) => {
    e.preventDefault();
    const empty = ['credential_id', 'ttl'].find((n) => !(form[n] ?? '').trim());
    void state.submit(async () => onMinted(await api.post<Token>('/v1/tokens', mintBody(form))), empty ? field(empty) : undefined);
  };
  const text = (name: string, optional = true) => {
    const f = field(name);
    return (
      <Field id={`mint-${name}`} label={f.label} help={f.help} optional={optional} error={state.errorOf(name)}>
        {(p) => <input {...p} name={name} value={form[name] ?? ''} placeholder={f.placeholder ?? ''} onInput={set(name)} autocomplete="off" spellcheck={false} />}
      </Field>
    );
  };
  return (
    <form onSubmit={submit} aria-label="Mint a proxy token" class="stack" noValidate>
      <Field id="mint-credential_id" label="Credential" help={credentials ? 'The stored key the token\'s requests use.' : 'A credential your key may mint for.'} error={state.errorOf('credential_id')}>
        {(p) => choices.length > 0 ? (
          <select {...p} name="credential_id" value={form.credential_id} onChange={(e) => setForm({ ...form, credential_id: valueOf(e) })}>
            {choices.map((c) => <option value={c.id} key={c.id}>{c.label}</option>)}
          </select>
        ) : (
          <input {...p} name="credential_id" value={form.credential_id ?? ''} onInput={set('credential_id')} placeholder="cred_…" autocomplete="off" />
        )}
      </Field>
      {text('name')}
      {text('ttl', false)}
      <fieldset class="stack">
        <legend>Limits (optional)</legend>
        {text('models')}
        {text('paths')}
        {text('max_requests')}
        {text('rate_limit')}
        {text('budget_usd')}
        {mcp ? text('tools') : null}
        {text('tokens_per_minute')}
        {text('max_concurrent')}
      </fieldset>
      <button type="submit" disabled={state.busy}>Mint token</button>
      <FormError state={state} />
    </form>
  );
}

/** A template with {proxy}, {token} and plain fields filled in (a field this page cannot know stays as <field>). */
export function fillTemplate(template: string, values: Record<string, string>): string {
  return template.replace(/\{([a-z_][a-z0-9_]*)\}/g, (_m, name: string) => values[name] ?? `<${name}>`);
}

/** How to point a provider's SDKs at this gateway with `token`: its declared variables or code, filled and copyable. */
export function SdkSetupPanel({ provider, token, credential, nested = false }: { provider: Provider | undefined; token: string; credential?: Credential | undefined; nested?: boolean }) {
  const Heading = nested ? 'h4' : 'h3';
  const proxy = `${location.origin}/v1/proxy`;
  const plain = Object.fromEntries(Object.entries(credential ?? {}).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
  const values = { ...plain, proxy, token };
  const entries: SdkSetup[] = provider?.sdk?.length ? provider.sdk : [{ name: 'Any HTTP client', code: `curl ${proxy}/<provider path> -H 'X-Proxy-Token: {token}'` }];
  return (
    <div class="sdk" data-provider={provider?.id}>
      {entries.map((e, i) => {
        const env = e.env ? Object.entries(e.env).map(([k, v]) => `${k}=${fillTemplate(v, values)}`).join('\n') : undefined;
        const code = e.code ? fillTemplate(e.code, values) : undefined;
        return (
          <div class="sdk-entry" key={e.name}>
            <Heading id={`sdk-${i}`}>{e.name}</Heading>
            {env ? <pre class="snippet" aria-labelledby={`sdk-${i}`} data-kind="env"><code>{env}</code></pre> : null}
            {code ? <pre class="snippet" aria-labelledby={`sdk-${i}`} data-kind="code"><code>{code}</code></pre> : null}
            {e.note ? <p class="note">{e.note}</p> : null}
            <CopyButton value={env ?? code ?? ''} label={env ? 'Copy variables' : 'Copy code'} describedBy={`sdk-${i}`} />
          </div>
        );
      })}
    </div>
  );
}

/** A token just minted: its value shown once, then how to use it; gone once dismissed. */
export function MintedToken({ token, credential, providers, nested = false, onDismiss }: {
  token: Token; credential: Credential | undefined; providers: Provider[]; nested?: boolean; onDismiss: () => void;
}) {
  const Heading = nested ? 'h3' : 'h2';
  const [chosen, setChosen] = useState(credential?.provider ?? providers[0]?.id ?? '');
  const provider = providers.find((p) => p.id === chosen);
  const what = token.name ? `"${token.name}"` : 'The token';
  return (
    <div class="minted" data-id={token.id}>
      <p role="status"><strong>{what} is ready.</strong> Copy it now: it is not shown again.</p>
      <ShownOnce id="minted-value" label="Token" value={token.token ?? ''} copyLabel="Copy token" />
      <Heading class="use">Use it{provider ? ` with ${provider.name}` : ''}</Heading>
      {credential ? null : (
        <Field id="minted-provider" label="Provider of its credential">
          {(p) => <select {...p} value={chosen} onChange={(e) => setChosen(valueOf(e))}>{providers.map((x) => <option key={x.id} value={x.id}>{x.name}</option>)}</select>}
        </Field>
      )}
      <p class="note">Set these where the agent runs; its SDK then sends every request through this gateway with the token instead of a provider key.</p>
      <SdkSetupPanel provider={provider} token={token.token ?? ''} credential={credential} nested={nested} />
      <div class="row">
        <button type="button" onClick={onDismiss}>Done</button>
      </div>
    </div>
  );
}
