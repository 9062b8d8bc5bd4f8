import { useEffect, useState } from 'react';
import type { User } from '@bindery/contracts';
import { SIGN_IN_NONCE, api, storeToken, storedToken, whenUnauthorized } from './api.ts';
import { Link, navigate, useRoute } from './router.tsx';
import { Callers, Connect } from './screens/Callers.tsx';
import { Data } from './screens/Data.tsx';
import { ExposureView, Exposures } from './screens/Exposures.tsx';
import { Login } from './screens/Login.tsx';
import { Account } from './screens/Account.tsx';
import { Consent } from './screens/Consent.tsx';
import { Logs } from './screens/Logs.tsx';
import { OpenApiImport } from './screens/OpenApiImport.tsx';
import { Overview } from './screens/Overview.tsx';
import { Playground } from './screens/Playground.tsx';
import { TableView } from './screens/TableData.tsx';
import { Tools } from './screens/Tools.tsx';
import { Upstreams } from './screens/Upstreams.tsx';
import { ErrorMessage } from './ui.tsx';
import { endKeptSession, Sidebar } from './sidebar.tsx';

const NAV = [
  { to: '/', label: 'Overview' },
  { to: '/data', label: 'Data' },
  { to: '/tools', label: 'Tools' },
  { to: '/exposures', label: 'Exposures' },
  { to: '/playground', label: 'Playground' },
  { to: '/callers', label: 'Callers' },
  { to: '/logs', label: 'Logs' },
];

function Screen({ path, user }: { path: string; user: User }) {
  const [, section, kind, id] = path.split('/');
  if (path === '/') return <Overview />;
  if (section === 'account' && !kind) return <Account user={user} />;
  if (section === 'data' && kind === 'tables' && id) return <TableView id={decodeURIComponent(id)} />;
  if (section === 'data' && !kind) return <Data />;
  if (section === 'tools' && !kind) return <Tools />;
  if (section === 'tools' && kind === 'import' && !id) return <OpenApiImport />;
  if (section === 'tools' && kind === 'upstreams' && !id) return <Upstreams />;
  if (section === 'exposures' && kind) return <ExposureView id={decodeURIComponent(kind)} />;
  if (section === 'exposures') return <Exposures />;
  if (section === 'playground' && !kind) return <Playground />;
  if (section === 'callers' && !kind) return <Callers />;
  if (section === 'connect' && !kind) return <Connect />;
  if (section === 'logs' && !kind) return <Logs />;
  return (
    <>
      <h1>Not found</h1>
      <p>
        Nothing here. <Link to="/">Back to the overview</Link>
      </p>
    </>
  );
}

export function App() {
  const path = useRoute();
  const [user, setUser] = useState<User | null>(null);
  const [checking, setChecking] = useState(storedToken() !== null);
  const [checkError, setCheckError] = useState<unknown>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [sidebar, setSidebar] = useState(false);

  const logOut = (message: string | null) => {
    // With the token still there: the sidebar session it opened ends with the sign-in.
    void endKeptSession();
    storeToken(null);
    setUser(null);
    setNotice(message);
  };
  useEffect(() => {
    whenUnauthorized((message) => logOut(`Logged out: ${message}`));
    // Back from the external sign-in provider: its token (or why not) is in the fragment, which
    // is taken out of the address at once.
    const fragment = new URLSearchParams(window.location.hash.slice(1));
    const given = fragment.get('bindery_token');
    const refused = fragment.get('sign_in_error');
    if (given !== null || refused !== null) {
      window.history.replaceState(null, '', window.location.pathname + window.location.search);
      // Only the answer to a sign-in this tab started (a link carrying someone's token is not).
      const expected = sessionStorage.getItem(SIGN_IN_NONCE);
      sessionStorage.removeItem(SIGN_IN_NONCE);
      if (given !== null && expected !== null && fragment.get('bindery_nonce') === expected)
        storeToken(given);
      else if (given !== null) setNotice('A sign-in this tab did not start was ignored.');
      if (refused !== null) setNotice(`Not signed in: ${refused}`);
    }
    // A token kept from earlier in this tab: check it is still accepted.
    if (storedToken() === null) return;
    api<User>('GET', '/api/v2/me')
      .then(setUser, setCheckError)
      .finally(() => setChecking(false));
  }, []);

  if (checking) return <p className="loading">Checking your token…</p>;
  if (!user) {
    return (
      <>
        <ErrorMessage error={user === null && storedToken() !== null ? checkError : null} />
        <Login
          notice={notice}
          onLogin={(token, me) => {
            storeToken(token);
            setNotice(null);
            setCheckError(null);
            setUser(me);
          }}
        />
      </>
    );
  }
  // An agent's authorization request: its consent screen alone (the path the control plane sends
  // the browser to is outside /console, so the request's cookie reaches its calls).
  const consent = /^\/oauth\/interaction\/([A-Za-z0-9_-]+)$/u.exec(path);
  if (consent) {
    return (
      <main id="main">
        <Consent uid={consent[1]!} user={user} />
      </main>
    );
  }
  const current = NAV.filter((item) => (item.to === '/' ? path === '/' : path.startsWith(item.to))).pop();
  return (
    <div className={sidebar ? 'layout with-sidebar' : 'layout'}>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Bindery</span>
        <nav aria-label="Main">
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <Link to={item.to} aria-current={current === item ? 'page' : undefined}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <button
          type="button"
          className="secondary small"
          aria-pressed={sidebar}
          onClick={() => setSidebar((open) => !open)}
        >
          Sidebar
        </button>
        <Link to="/account" className="who" aria-current={path === '/account' ? 'page' : undefined}>
          {user.name}
          {user.is_root && ' (root)'}
        </Link>
        <button
          type="button"
          className="secondary small"
          onClick={() => {
            logOut('Logged out.');
            navigate('/');
          }}
        >
          Log out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        <Screen path={path} user={user} />
      </main>
      {sidebar && <Sidebar path={path} onClose={() => setSidebar(false)} />}
    </div>
  );
}
