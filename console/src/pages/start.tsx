/**
 * The first-run guide: three steps on one page, each done in place. 1. Store a provider key (the
 * credential form; once keys exist, they are named and the step is marked done). 2. Mint a token for
 * that key (the mint form, the key just stored picked). 3. Point the agent at the gateway (the token
 * shown once with its provider's SDK variables). The console opens here while the organisation has no
 * key or no token; it stays in the navigation as "Get started".
 */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import type { Api, Credential, ListOf, Token } from '../api.js';
import { ErrorLine, Section, useLoad } from '../components.js';
import { credentialLabel } from '../format.js';
import type { Abilities } from '../roles.js';
import { CreateCredential } from './credential-form.js';
import { MintedToken, MintForm } from './mint.js';
import { useNames } from './tokens.js';

function Step({ n, title, done, children }: { n: number; title: string; done: boolean; children: ComponentChildren }) {
  return (
    <li class={`step${done ? ' done' : ''}`} data-step={n}>
      <Section title={`${n}. ${title}`}>
        {done ? <p class="done-mark"><span aria-hidden="true">✓ </span>Done.</p> : null}
        {children}
      </Section>
    </li>
  );
}

export function StartPage({ api, can }: { api: Api; can: Abilities }) {
  const { credentials, providers } = useNames(api, can);
  const tokens = useLoad(() => api.get<ListOf<Token>>('/v1/tokens?limit=1'), [api]);
  const [stored, setStored] = useState<Credential>();
  const [minted, setMinted] = useState<Token>();
  const [another, setAnother] = useState(false);
  const keys = credentials.data ?? [];
  const all = providers.data ?? [];
  const hasKey = keys.length > 0 || stored !== undefined;
  const hasToken = (tokens.data?.data.length ?? 0) > 0 || minted !== undefined;
  if (credentials.loading || providers.loading) return <p role="status">Reading this organisation…</p>;

  return (
    <>
      <p class="lead">Three steps: store a provider key, mint a token for an agent, and point the agent's SDK at this gateway. The agent never sees the key.</p>
      <ErrorLine error={credentials.error ?? providers.error} />
      <ol class="steps">
        <Step n={1} title="Store a provider key" done={hasKey}>
          {hasKey ? (
            <>
              <p>Stored: {[...new Map([...(stored ? [stored] : []), ...keys].map((c) => [c.id, c])).values()].map((c) => credentialLabel(c, all)).join('; ')}.</p>
              {another ? null : <button type="button" onClick={() => setAnother(true)}>Store another key</button>}
            </>
          ) : <p>Your provider's API key is encrypted here; tokens made from it can be revoked any time.</p>}
          {!hasKey || another ? <CreateCredential api={api} providers={all} onCreated={(c) => {
            setStored(c);
            setAnother(false);
            credentials.reload();
          }} /> : null}
        </Step>
        <Step n={2} title="Mint a token for your agent" done={hasToken}>
          {hasKey && minted ? <p>Minted {minted.name ? `"${minted.name}"` : 'a token'}. <button type="button" onClick={() => setMinted(undefined)}>Mint another token</button></p> : null}
          {hasKey && !minted ? (
            <>
              <p>A proxy token stands in for the key: give it a lifetime and, if you like, limits.</p>
              <MintForm key={stored?.id ?? 'mint'} api={api} credentials={stored && !keys.some((c) => c.id === stored.id) ? [stored, ...keys] : keys}
                minterIds={undefined} providers={all} preselect={stored?.id} onMinted={(t) => {
                  setMinted(t);
                  tokens.reload();
                }} />
            </>
          ) : null}
          {!hasKey ? <p class="note">Store a key first.</p> : null}
        </Step>
        <Step n={3} title="Point your agent at the gateway" done={minted !== undefined}>
          {minted ? (
            <MintedToken token={minted} credential={[...(stored ? [stored] : []), ...keys].find((c) => c.id === minted.credential_id)} providers={all}
              nested onDismiss={() => setMinted(undefined)} />
          ) : <p class="note">Once the token is minted, the variables its SDK needs appear here, ready to copy.</p>}
        </Step>
      </ol>
      <p>Next: <a href="#/tokens">tokens</a> (revoke, rename, usage), <a href="#/usage">usage and spend</a>, and <a href="#/admin-keys">admin keys</a> for your CI and team.</p>
    </>
  );
}
