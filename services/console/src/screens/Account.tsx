import { useState, type FormEvent } from 'react';
import type { User } from '@bindery/contracts';
import { api } from '../api.ts';
import { TextField } from '../forms.tsx';
import { ErrorMessage } from '../ui.tsx';
import { Grants } from './Consent.tsx';

/** The signed-in person's own settings: the password they sign in to the console with. */
export function Account({ user }: { user: User }) {
  const [current, setCurrent] = useState('');
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const [busy, setBusy] = useState(false);
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setSaved(false);
    if (password.length < 12) {
      setError(new Error('A password is at least 12 characters long.'));
      return;
    }
    if (password !== again) {
      setError(new Error('The two new passwords differ.'));
      return;
    }
    setBusy(true);
    try {
      await api('PUT', '/api/v2/me/password', {
        body: { password, ...(current !== '' && { current_password: current }) },
      });
      setError(null);
      setSaved(true);
      setCurrent('');
      setPassword('');
      setAgain('');
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <h1>Your account</h1>
      <p>
        Signed in as <strong>{user.name}</strong>
        {user.is_root && ' (root)'}.
      </p>
      <form
        onSubmit={(event) => void save(event)}
        className="card stacked-form"
        aria-labelledby="password-title"
      >
        <h2 id="password-title">Sign-in password</h2>
        <p className="hint">
          With a password you sign in to the console with your name; a sign-in lasts 12 hours. Give the
          current password to change one you set before.
        </p>
        <input type="text" autoComplete="username" value={user.name} readOnly hidden />
        <TextField
          label="Current password"
          hint="Only when you set one before."
          type="password"
          autoComplete="current-password"
          value={current}
          onChange={setCurrent}
        />
        <TextField
          label="New password"
          hint="12 characters or more."
          type="password"
          autoComplete="new-password"
          value={password}
          onChange={setPassword}
        />
        <TextField
          label="New password, again"
          type="password"
          autoComplete="new-password"
          value={again}
          onChange={setAgain}
        />
        <ErrorMessage error={error} />
        {saved && (
          <p className="notice" role="status">
            Password saved. Sign in with your name and this password from now on.
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Saving…' : 'Save password'}
        </button>
      </form>
      <Grants />
    </>
  );
}
