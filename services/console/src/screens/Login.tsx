import { useState, type FormEvent } from 'react';
import type { User } from '@bindery/contracts';
import { api } from '../api.ts';
import { ErrorMessage } from '../ui.tsx';

export function Login({
  onLogin,
  notice,
}: {
  onLogin: (token: string, user: User) => void;
  notice: string | null;
}) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const value = token.trim();
    if (value === '') {
      setError(new Error('Paste an admin token first.'));
      return;
    }
    setBusy(true);
    try {
      const user = await api<User>('GET', '/api/v2/me', { token: value });
      onLogin(value, user);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="login" id="main">
      <h1>Bindery console</h1>
      <form onSubmit={(event) => void submit(event)} className="card">
        <label htmlFor="token">Admin token</label>
        <input
          id="token"
          type="password"
          autoComplete="off"
          spellCheck={false}
          value={token}
          onChange={(event) => setToken(event.target.value)}
          placeholder="bnd_admin_…"
        />
        <p className="hint">
          The root token is printed once by <code>pnpm start</code> (or set with{' '}
          <code>BINDERY_ADMIN_TOKEN</code>). It is kept in this tab only and forgotten when the tab closes.
        </p>
        {notice && <p className="notice">{notice}</p>}
        <ErrorMessage error={error} />
        <button type="submit" disabled={busy}>
          {busy ? 'Checking…' : 'Log in'}
        </button>
      </form>
    </main>
  );
}
