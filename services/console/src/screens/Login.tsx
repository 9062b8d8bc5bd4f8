import { useEffect, useState, type FormEvent } from 'react';
import type { SignInAnswer, User } from '@bindery/contracts';
import { SIGN_IN_NONCE, api } from '../api.ts';
import { TextField } from '../forms.tsx';
import { ErrorMessage } from '../ui.tsx';

/**
 * The way in: a name and password (a person who set one under "Your account"), or an admin token
 * pasted (the root token printed at the first start, or one made for automation).
 */
/** Where the external sign-in starts, with a nonce this tab keeps to recognise its answer. */
function startExternalSignIn(): string {
  const nonce = crypto.randomUUID();
  sessionStorage.setItem(SIGN_IN_NONCE, nonce);
  const query = new URLSearchParams({ return_to: window.location.pathname, nonce });
  return `/api/v2/sign-in/oidc?${query.toString()}`;
}

export function Login({
  onLogin,
  notice,
}: {
  onLogin: (token: string, user: User) => void;
  notice: string | null;
}) {
  const [name, setName] = useState('');
  const [password, setPassword] = useState('');
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState<'password' | 'token' | null>(null);
  // The external provider people may sign in with, when the control plane has one.
  const [provider, setProvider] = useState<string | null>(null);
  useEffect(() => {
    api<{ oidc: { name: string } | null }>('GET', '/api/v2/sign-in/options', { token: '' })
      .then((options) => setProvider(options.oidc?.name ?? null))
      .catch(() => setProvider(null));
  }, []);
  const signIn = async (event: FormEvent) => {
    event.preventDefault();
    if (name.trim() === '' || password === '') {
      setError(new Error('Give your name and password.'));
      return;
    }
    setBusy('password');
    try {
      const answer = await api<SignInAnswer>('POST', '/api/v2/sign-in', {
        token: '',
        body: { name: name.trim(), password },
      });
      setPassword('');
      onLogin(answer.token, answer.user);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(null);
    }
  };
  const useToken = async (event: FormEvent) => {
    event.preventDefault();
    const value = token.trim();
    if (value === '') {
      setError(new Error('Paste an admin token first.'));
      return;
    }
    setBusy('token');
    try {
      const user = await api<User>('GET', '/api/v2/me', { token: value });
      onLogin(value, user);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(null);
    }
  };
  return (
    <main className="login" id="main">
      <h1>Bindery console</h1>
      {notice && <p className="notice">{notice}</p>}
      <ErrorMessage error={error} />
      <form onSubmit={(event) => void signIn(event)} className="card" aria-labelledby="sign-in-title">
        <h2 id="sign-in-title">Sign in</h2>
        <TextField label="Name" autoComplete="username" value={name} onChange={setName} />
        <TextField
          label="Password"
          type="password"
          autoComplete="current-password"
          value={password}
          onChange={setPassword}
        />
        <button type="submit" disabled={busy !== null}>
          {busy === 'password' ? 'Signing in…' : 'Sign in'}
        </button>
        {provider !== null && (
          <p>
            <a
              className="button secondary"
              href="/api/v2/sign-in/oidc"
              onClick={(event) => {
                event.preventDefault();
                window.location.assign(startExternalSignIn());
              }}
            >
              Sign in with {provider}
            </a>
          </p>
        )}
      </form>
      <form onSubmit={(event) => void useToken(event)} className="card" aria-labelledby="token-title">
        <h2 id="token-title">Or log in with a token</h2>
        <TextField
          label="Admin token"
          type="password"
          value={token}
          onChange={setToken}
          placeholder="bnd_admin_…"
        />
        <p className="hint">
          The root token is printed once by <code>pnpm start</code> (or set with{' '}
          <code>BINDERY_ADMIN_TOKEN</code>). It is kept in this tab only and forgotten when the tab closes.
          Set a password under “Your account” to sign in with your name next time.
        </p>
        <button type="submit" className="secondary" disabled={busy !== null}>
          {busy === 'token' ? 'Checking…' : 'Log in with the token'}
        </button>
      </form>
    </main>
  );
}
