/**
 * The organisation: its name and id, who the signed-in key is (role, id), the federation subject to
 * put in a cloud's trust policy (when the gateway is an OIDC issuer: GET /v1/orgs/self's `federation`),
 * and, for the organisation token itself (owner), its rotation: a grace period for the current token,
 * the new one shown once with a copy button. The console then signs in with the new token (in memory,
 * and in this tab if the old one was kept there), so the session outlives the old token's grace.
 */
import { useState } from 'preact/hooks';
import type { Api, OrgSelf } from '../api.js';
import { ConfirmAction, CopyButton, ErrorLine, Field, Section, ShownOnce, shortTime, useLoad, valueOf } from '../components.js';
import type { Abilities } from '../roles.js';

const GRACES = [
  { s: 0, label: 'None: the current token stops at once' },
  { s: 300, label: '5 minutes' },
  { s: 3600, label: '1 hour' },
  { s: 86_400, label: '1 day' },
  { s: 604_800, label: '7 days' },
];

function RotateToken({ api, onRotated }: { api: Api; onRotated: (token: string) => void }) {
  const [grace, setGrace] = useState(3600);
  const [made, setMade] = useState<{ token: string; until: string }>();
  return (
    <>
      {made ? (
        <div class="minted">
          <p role="status"><strong>A new organisation token is ready.</strong> Copy it now and store it where the old one was: it is not shown again. This console now uses it.</p>
          <ShownOnce id="org-token-value" label="New organisation token" value={made.token} copyLabel="Copy token" />
          <p class="note">{made.until}</p>
        </div>
      ) : null}
      <div class="stack">
      <p>Rotating gives a new organisation token and retires the one in use after the grace period, so scripts can switch over. Admin keys are not touched.</p>
      <Field id="org-grace" label="The current token keeps working for" help="Long enough to update every place that holds it.">
        {(p) => (
          <select {...p} value={grace} onChange={(e) => setGrace(Number(valueOf(e)))}>
            {GRACES.map((g) => <option key={g.s} value={g.s}>{g.label}</option>)}
          </select>
        )}
      </Field>
      <ConfirmAction label="Rotate the token" name="of the organisation" question="Rotate the organisation token now?" confirmLabel="Rotate now" onConfirm={async () => {
        const r = await api.post<{ token?: string }>('/v1/orgs/self/token/rotate', { grace_s: grace });
        const until = grace === 0 ? 'The old token no longer works.' : `The old token works until ${shortTime(new Date(Date.now() + grace * 1000).toISOString())}.`;
        setMade({ token: r.token ?? '', until });
        if (r.token) onRotated(r.token);
      }} />
      </div>
    </>
  );
}

export function OrganisationPage({ api, can, onKeyChanged }: { api: Api; can: Abilities; onKeyChanged: (key: string) => void }) {
  const self = useLoad(() => api.get<OrgSelf>('/v1/orgs/self'), [api]);
  const o = self.data;
  return (
    <>
      <Section title="Details">
        <ErrorLine error={self.error} />
        {o ? (
          <dl class="facts">
            <div><dt>Name</dt><dd>{o.name}</dd></div>
            <div><dt>Id</dt><dd class="mono">{o.id}</dd></div>
            <div><dt>Created</dt><dd>{shortTime(o.created_at)}</dd></div>
            <div><dt>Signed in with</dt><dd>{o.caller?.id?.startsWith('usr_') ? `single sign-on (${o.caller.role ?? 'member'})` : o.caller?.role === 'owner' ? 'the organisation token' : `an admin key (${o.caller?.role ?? 'owner'})`} <span class="mono">{o.caller?.id}</span></dd></div>
          </dl>
        ) : null}
      </Section>
      {o?.federation ? (
        <Section title="Cloud federation" id="federation">
          <p>This gateway signs identity tokens for the organisation, so AWS, Azure and Google Cloud credentials need no stored secret. Trust this issuer and subject in the cloud's role or workload identity pool.</p>
          <dl class="facts">
            <div><dt>Issuer</dt><dd class="mono wrap">{o.federation.issuer} <CopyButton value={o.federation.issuer} label="Copy issuer" /></dd></div>
            <div><dt>Subject</dt><dd class="mono wrap">{o.federation.subject} <CopyButton value={o.federation.subject} label="Copy subject" /></dd></div>
          </dl>
          <h3 class="sub-heading">Where each cloud takes them</h3>
          <ul class="clouds">
            <li><strong>AWS (Bedrock):</strong> an IAM OIDC provider for the issuer with audience <span class="mono">sts.amazonaws.com</span>, and a role whose trust policy requires this subject; the credential names the role.</li>
            <li><strong>Azure OpenAI:</strong> a federated credential on an Entra app with this issuer and subject and audience <span class="mono">api://AzureADTokenExchange</span>; the credential names the tenant and the app.</li>
            <li><strong>Google Vertex AI:</strong> a workload identity pool provider for the issuer that admits only this subject (its audience is the provider's own name); the credential names the provider.</li>
          </ul>
        </Section>
      ) : null}
      {can.rotateOrgToken ? (
        <Section title="Rotate the organisation token">
          <RotateToken api={api} onRotated={onKeyChanged} />
        </Section>
      ) : null}
    </>
  );
}
