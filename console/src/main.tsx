/**
 * The console's shell: sign-in state, the navigation (the page is named by the URL's fragment,
 * `#/tokens`, which never carries the key), where a session opens (the first-run guide while an owner's
 * or admin's organisation has no key or no token yet, else Tokens), focus moved to each page's heading
 * as it opens, and sign-out, which forgets the key everywhere. A 401 from any call signs out.
 * Pages a role cannot use are not offered (roles.ts); the API refuses them regardless. A browser
 * that came back from single sign-on holds a session cookie: the console reads who it is and the
 * session's anti-CSRF value (GET /v1/session), and signs out with DELETE /v1/session.
 */
import { render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api, type Caller, type Credentials, type ListOf } from './api.js';
import { AdminKeysPage } from './pages/admin-keys.js';
import { AuditPage } from './pages/audit.js';
import { CredentialsPage } from './pages/credentials.js';
import { OrganisationPage } from './pages/organisation.js';
import { PoolsPage } from './pages/pools.js';
import { MembersPage } from './pages/members.js';
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
import { forgetSsoSession, hasSsoSession, takeSignInError } from './sso.js';

type PageId = 'start' | 'tokens' | 'credentials' | 'pools' | 'teams' | 'members' | 'usage' | 'spend' | 'audit' | 'admin-keys' | 'trust-policies' | 'organisation';
const PAGES: Array<{ id: PageId; title: string; offered: (can: Abilities) => boolean }> = [
  { id: 'start', title: 'Get started', offered: (can) => can.manageCredentials },
  { id: 'tokens', title: 'Tokens', offered: (can) => can.readAll || can.mint },
  { id: 'credentials', title: 'Credentials', offered: (can) => can.readAll },
  { id: 'pools', title: 'Pools', offered: (can) => can.readAll },
  { id: 'teams', title: 'Teams', offered: (can) => can.readAll },
  { id: 'members', title: 'Members', offered: (can) => can.readAll },
  { id: 'usage', title: 'Usage', offered: (can) => can.readAll },
  { id: 'spend', title: 'Spend', offered: (can) => can.readAll },
  { id: 'audit', title: 'Audit', offered: (can) => can.readAll },
  { id: 'admin-keys', title: 'Admin keys', offered: (can) => can.manageKeys },
  { id: 'trust-policies', title: 'Trust policies', offered: (can) => can.readAll },
  { id: 'organisation', title: 'Organisation', offered: () => true },
];

const SIGNED_OUT = 'Signed out: this key is no longer accepted (it was revoked, expired or replaced). Sign in with a current one.';
const SESSION_ENDED = 'Your single sign-on session has ended (it expired, was signed out elsewhere, or you were removed). Sign in again.';

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
  /** A pasted key, or the single sign-on cookie's anti-CSRF value. */
  credentials: Credentials;
  caller: Caller;
}

/** The single sign-on session this browser holds, as a console session (undefined: none, or it has ended). */
async function cookieSession(): Promise<Session | undefined> {
  const found = await Api.session();
  if (!found?.csrf) return undefined;
  const credentials = { csrf: found.csrf };
  const caller = await new Api(credentials).whoami();
  return { credentials, caller: { ...caller, orgName: found.org.name, ...(found.member.email ? { email: found.member.email } : {}) } };
}

function App() {
  const [session, setSession] = useState<Session>();
  const [notice, setNotice] = useState<string>();
  const [refused] = useState(takeSignInError);
  const [restoring, setRestoring] = useState(() => rememberedKey() !== undefined || hasSsoSession());
  const [landing, setLanding] = useState<PageId>();
  const hashPage = useHashPage();
  const heading = useRef<HTMLHeadingElement>(null);

  const signOut = (message?: string) => {
    forgetKey();
    forgetSsoSession();
    setSession(undefined);
    setLanding(undefined);
    setNotice(message);
  };
  const api = useMemo(() => (session ? new Api(session.credentials, () => signOut(typeof session.credentials === 'string' ? SIGNED_OUT : SESSION_ENDED)) : undefined), [session?.credentials]);
  const can = abilitiesOf(session?.caller.role ?? 'owner');
  const offered = PAGES.filter((p) => p.offered(can));

  // A key kept in this tab's session storage: check it again (it may be revoked) before using it. Else a single sign-on cookie.
  useEffect(() => {
    const key = rememberedKey();
    if (key) {
      new Api(key).whoami().then((caller) => setSession({ credentials: key, caller }), () => forgetKey()).finally(() => setRestoring(false));
      return;
    }
    if (!hasSsoSession()) return;
    cookieSession().then((found) => {
      if (found) return setSession(found);
      forgetSsoSession();
      setNotice(SESSION_ENDED);
    }, () => setNotice('The gateway could not be reached to read your single sign-on session. Reload to try again.')).finally(() => setRestoring(false));
  }, []);

  // Where a new session opens when the URL names no page.
  useEffect(() => {
    if (!session || !api || landing) return;
    if (pageFromHash()) return setLanding('tokens');
    landingPage(api, abilitiesOf(session.caller.role)).then(setLanding, () => setLanding('tokens'));
  }, [session?.credentials]);

  const page = offered.find((p) => p.id === hashPage) ?? offered.find((p) => p.id === landing) ?? offered.find((p) => p.id === 'tokens') ?? offered.find((p) => p.id === 'organisation')!;

  useEffect(() => {
    if (session && landing) heading.current?.focus();
  }, [page.id, landing, session !== undefined]);

  if (restoring) return <main id="main"><p role="status">Checking the saved key…</p></main>;
  if (!session || !api) {
    return <SignIn notice={notice} refused={refused} onSignedIn={(key, caller, keep) => {
      keepKey(key, keep);
      setNotice(undefined);
      setSession({ credentials: key, caller });
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
        <span class="who" data-role={session.caller.role}>{session.caller.orgName ? `${session.caller.orgName} · ` : ''}{session.caller.email ? `${session.caller.email} · ` : ''}{session.caller.role}</span>
        <button type="button" onClick={() => {
          // A single sign-on session ends at the gateway too (DELETE /v1/session); a key is only forgotten here.
          if (api.bySession) void api.delete('/v1/session').catch(() => {}).finally(() => signOut('Signed out.'));
          else signOut('Signed out.');
        }}>Sign out</button>
      </header>
      <main id="main">
        <h1 tabIndex={-1} ref={heading}>{page.title}</h1>
        {page.id === 'start' ? <StartPage api={api} can={can} /> : null}
        {page.id === 'tokens' ? <TokensPage api={api} can={can} credentialIds={session.caller.credentialIds} /> : null}
        {page.id === 'credentials' ? <CredentialsPage api={api} can={can} /> : null}
        {page.id === 'pools' ? <PoolsPage api={api} can={can} /> : null}
        {page.id === 'teams' ? <TeamsPage api={api} can={can} /> : null}
        {page.id === 'members' ? <MembersPage api={api} can={can} /> : null}
        {page.id === 'usage' ? <UsagePage api={api} can={can} /> : null}
        {page.id === 'spend' ? <SpendPage api={api} can={can} /> : null}
        {page.id === 'audit' ? <AuditPage api={api} /> : null}
        {page.id === 'admin-keys' ? <AdminKeysPage api={api} /> : null}
        {page.id === 'trust-policies' ? <TrustPoliciesPage api={api} can={can} /> : null}
        {page.id === 'organisation' ? <OrganisationPage api={api} can={can} onKeyChanged={(key) => {
          replaceKey(key);
          setSession({ ...session, credentials: key });
        }} /> : null}
      </main>
    </>
  );
}

// The page a SaaS sends the browser back to after consent: completed, then Credentials (pages/oauth-connect.tsx).
if (location.pathname === CALLBACK_PATH) void finishConnect();
else render(<App />, document.getElementById('app')!);
