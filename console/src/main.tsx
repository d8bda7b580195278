/**
 * The console's shell: sign-in state, the navigation (the page is named by the URL's fragment,
 * `#/tokens`, which never carries the key), focus moved to each page's heading as it opens, and
 * sign-out, which forgets the key everywhere. A 401 from any call signs out with the API's words.
 * Pages a role cannot use are not offered (roles.ts); the API refuses them regardless.
 */
import { render } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { Api, type Caller } from './api.js';
import { AuditPage } from './pages/audit.js';
import { CredentialsPage } from './pages/credentials.js';
import { SignIn } from './pages/signin.js';
import { TokensPage } from './pages/tokens.js';
import { UsagePage } from './pages/usage.js';
import { abilitiesOf } from './roles.js';
import { forgetKey, keepKey, rememberedKey } from './session.js';

type PageId = 'tokens' | 'credentials' | 'usage' | 'audit';
const PAGES: Array<{ id: PageId; title: string; needsReadAll: boolean }> = [
  { id: 'tokens', title: 'Tokens', needsReadAll: false },
  { id: 'credentials', title: 'Credentials', needsReadAll: true },
  { id: 'usage', title: 'Usage', needsReadAll: true },
  { id: 'audit', title: 'Audit', needsReadAll: true },
];

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

interface Session {
  key: string;
  caller: Caller;
}

function App() {
  const [session, setSession] = useState<Session>();
  const [notice, setNotice] = useState<string>();
  const [restoring, setRestoring] = useState(() => rememberedKey() !== undefined);
  const hashPage = useHashPage();
  const heading = useRef<HTMLHeadingElement>(null);

  const signOut = (message?: string) => {
    forgetKey();
    setSession(undefined);
    setNotice(message);
  };
  const api = useMemo(() => (session ? new Api(session.key, (m) => signOut(`Signed out: ${m}`)) : undefined), [session?.key]);

  // A key kept in this tab's session storage: check it again (it may be revoked) before using it.
  useEffect(() => {
    const key = rememberedKey();
    if (!key) return;
    new Api(key).whoami().then((caller) => setSession({ key, caller }), () => forgetKey()).finally(() => setRestoring(false));
  }, []);

  const can = abilitiesOf(session?.caller.role ?? 'owner');
  const offered = PAGES.filter((p) => can.readAll || !p.needsReadAll);
  const page = offered.find((p) => p.id === hashPage) ?? offered[0]!;

  useEffect(() => {
    if (session) heading.current?.focus();
  }, [page.id, session?.key]);

  if (restoring) return <main id="main"><p role="status">Checking the saved key…</p></main>;
  if (!session || !api) {
    return <SignIn notice={notice} onSignedIn={(key, caller, keep) => {
      keepKey(key, keep);
      setNotice(undefined);
      setSession({ key, caller });
    }} />;
  }

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
        {page.id === 'tokens' ? <TokensPage api={api} can={can} credentialIds={session.caller.credentialIds} /> : null}
        {page.id === 'credentials' ? <CredentialsPage api={api} can={can} /> : null}
        {page.id === 'usage' ? <UsagePage api={api} can={can} /> : null}
        {page.id === 'audit' ? <AuditPage api={api} /> : null}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
