/**
 * The console's shell: sign-in state, the navigation (the page is named by the URL's fragment,
 * `#/tokens`, which never carries the key), where a session opens (the first-run guide while an owner's
 * or admin's organisation has no key or no token yet, else Tokens), focus moved to each page's heading
 * as it opens, and sign-out, which forgets the key everywhere. A 401 from any call signs out.
 * Pages a role cannot use are not offered (roles.ts); the API refuses them regardless.
 */
import { render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api, type Caller, type ListOf } from './api.js';
import { AdminKeysPage } from './pages/admin-keys.js';
import { AuditPage } from './pages/audit.js';
import { CredentialsPage } from './pages/credentials.js';
import { OrganisationPage } from './pages/organisation.js';
import { PoolsPage } from './pages/pools.js';
import { TeamsPage } from './pages/teams.js';
import { SignIn } from './pages/signin.js';
import { SpendPage } from './pages/spend.js';
import { StartPage } from './pages/start.js';
import { TokensPage } from './pages/tokens.js';
import { TrustPoliciesPage } from './pages/trust-policies.js';
import { UsagePage } from './pages/usage.js';
import { CALLBACK_PATH, finishConnect } from './pages/oauth-connect.js';
import { abilitiesOf, type Abilities } from './roles.js';
import { forgetKey, keepKey, rememberedKey, replaceKey } from './session.js';

type PageId = 'start' | 'tokens' | 'credentials' | 'pools' | 'teams' | 'usage' | 'spend' | 'audit' | 'admin-keys' | 'trust-policies' | 'organisation';
const PAGES: Array<{ id: PageId; title: string; offered: (can: Abilities) => boolean }> = [
  { id: 'start', title: 'Get started', offered: (can) => can.manageCredentials },
  { id: 'tokens', title: 'Tokens', offered: () => true },
  { id: 'credentials', title: 'Credentials', offered: (can) => can.readAll },
  { id: 'pools', title: 'Pools', offered: (can) => can.readAll },
  { id: 'teams', title: 'Teams', offered: (can) => can.readAll },
  { id: 'usage', title: 'Usage', offered: (can) => can.readAll },
  { id: 'spend', title: 'Spend', offered: (can) => can.readAll },
  { id: 'audit', title: 'Audit', offered: (can) => can.readAll },
  { id: 'admin-keys', title: 'Admin keys', offered: (can) => can.manageKeys },
  { id: 'trust-policies', title: 'Trust policies', offered: (can) => can.readAll },
  { id: 'organisation', title: 'Organisation', offered: () => true },
];

const SIGNED_OUT = 'Signed out: this key is no longer accepted (it was revoked, expired or replaced). Sign in with a current one.';

const pageFromHash = (): PageId | undefined => PAGES.find((p) => location.hash === `#/${p.id}`)?.id;

function useHashPage(): PageId | undefined {
  const [page, setPage] = useState(pageFromHash());
  useEffect(() => {
    const onHash = () => setPage(pageFromHash());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  return page;
}

/** The guide while an organisation has no key or no token yet (for those who can store one), else Tokens. */
async function landingPage(api: Api, can: Abilities): Promise<PageId> {
  if (!can.manageCredentials) return 'tokens';
  const [keys, tokens] = await Promise.all([api.get<ListOf<unknown>>('/v1/credentials?limit=1'), api.get<ListOf<unknown>>('/v1/tokens?limit=1')]);
  return keys.data.length === 0 || tokens.data.length === 0 ? 'start' : 'tokens';
}

interface Session {
  key: string;
  caller: Caller;
}

function App() {
  const [session, setSession] = useState<Session>();
  const [notice, setNotice] = useState<string>();
  const [restoring, setRestoring] = useState(() => rememberedKey() !== undefined);
  const [landing, setLanding] = useState<PageId>();
  const hashPage = useHashPage();
  const heading = useRef<HTMLHeadingElement>(null);

  const signOut = (message?: string) => {
    forgetKey();
    setSession(undefined);
    setLanding(undefined);
    setNotice(message);
  };
  const api = useMemo(() => (session ? new Api(session.key, () => signOut(SIGNED_OUT)) : undefined), [session?.key]);
  const can = abilitiesOf(session?.caller.role ?? 'owner');
  const offered = PAGES.filter((p) => p.offered(can));

  // A key kept in this tab's session storage: check it again (it may be revoked) before using it.
  useEffect(() => {
    const key = rememberedKey();
    if (!key) return;
    new Api(key).whoami().then((caller) => setSession({ key, caller }), () => forgetKey()).finally(() => setRestoring(false));
  }, []);

  // Where a new session opens when the URL names no page.
  useEffect(() => {
    if (!session || !api || landing) return;
    if (pageFromHash()) return setLanding('tokens');
    landingPage(api, abilitiesOf(session.caller.role)).then(setLanding, () => setLanding('tokens'));
  }, [session?.key]);

  const page = offered.find((p) => p.id === hashPage) ?? offered.find((p) => p.id === landing) ?? offered.find((p) => p.id === 'tokens')!;

  useEffect(() => {
    if (session && landing) heading.current?.focus();
  }, [page.id, landing, session !== undefined]);

  if (restoring) return <main id="main"><p role="status">Checking the saved key…</p></main>;
  if (!session || !api) {
    return <SignIn notice={notice} onSignedIn={(key, caller, keep) => {
      keepKey(key, keep);
      setNotice(undefined);
      setSession({ key, caller });
    }} />;
  }
  if (!landing) return <main id="main"><p role="status">Opening the console…</p></main>;

  return (
    <>
      <a class="skip" href="#main" onClick={(e) => {
        e.preventDefault();
        heading.current?.focus();
      }}>Skip to content</a>
      <header class="top">
        <span class="brand">Keyward</span>
        <nav aria-label="Console">
          <ul>
            {offered.map((p) => (
              <li key={p.id}><a href={`#/${p.id}`} aria-current={p.id === page.id ? 'page' : undefined}>{p.title}</a></li>
            ))}
          </ul>
        </nav>
        <span class="who" data-role={session.caller.role}>{session.caller.orgName ? `${session.caller.orgName} · ` : ''}{session.caller.role}</span>
        <button type="button" onClick={() => signOut('Signed out.')}>Sign out</button>
      </header>
      <main id="main">
        <h1 tabIndex={-1} ref={heading}>{page.title}</h1>
        {page.id === 'start' ? <StartPage api={api} can={can} /> : null}
        {page.id === 'tokens' ? <TokensPage api={api} can={can} credentialIds={session.caller.credentialIds} /> : null}
        {page.id === 'credentials' ? <CredentialsPage api={api} can={can} /> : null}
        {page.id === 'pools' ? <PoolsPage api={api} can={can} /> : null}
        {page.id === 'teams' ? <TeamsPage api={api} can={can} /> : null}
        {page.id === 'usage' ? <UsagePage api={api} can={can} /> : null}
        {page.id === 'spend' ? <SpendPage api={api} can={can} /> : null}
        {page.id === 'audit' ? <AuditPage api={api} /> : null}
        {page.id === 'admin-keys' ? <AdminKeysPage api={api} /> : null}
        {page.id === 'trust-policies' ? <TrustPoliciesPage api={api} can={can} /> : null}
        {page.id === 'organisation' ? <OrganisationPage api={api} can={can} onKeyChanged={(key) => {
          replaceKey(key);
          setSession({ ...session, key });
        }} /> : null}
      </main>
    </>
  );
}

// The page a SaaS sends the browser back to after consent: completed, then Credentials (pages/oauth-connect.tsx).
if (location.pathname === CALLBACK_PATH) void finishConnect();
else render(<App />, document.getElementById('app')!);
