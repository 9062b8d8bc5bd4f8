import type { OAuthConsentAnswer, OAuthConsentDetails, OAuthGrantList, User } from '@bindery/contracts';
import { api } from '../api.ts';
import { ErrorMessage, useAction, useLoad } from '../ui.tsx';

const SCOPE_WORDS: Record<string, string> = {
  'mcp:tools': 'list and call its tools',
  'mcp:resources': 'read its resources',
  'mcp:prompts': 'use its prompts',
};

const CLIENT_KINDS: Record<OAuthConsentDetails['client']['kind'], string> = {
  metadata_document: 'identified by its published metadata document',
  dynamic: 'registered dynamically: Bindery cannot vouch for its name',
  registered: 'registered by an administrator',
};

/**
 * The consent screen of an authorization request (`/oauth/interaction/{uid}`): which client, which
 * MCP URLs of the person's it asks for, which scopes; "Allow" or "Deny" sends the browser back to
 * the client.
 */
export function Consent({ uid, user }: { uid: string; user: User }) {
  const base = `/oauth/interaction/${encodeURIComponent(uid)}`;
  const { data, error, loading } = useLoad(() => api<OAuthConsentDetails>('GET', `${base}/details`), [base]);
  const action = useAction();
  const decide = async (allow: boolean) => {
    const answer = await action.run(() =>
      api<OAuthConsentAnswer>('POST', `${base}/decision`, { body: { allow } }),
    );
    if (answer) window.location.assign(answer.redirect_to);
  };
  if (loading) return <p className="loading">Loading the request…</p>;
  if (!data) return <ErrorMessage error={error} />;
  const allYours = data.resources.length > 0 && data.resources.every((r) => r.yours);
  const name = data.client.name ?? data.client.client_id;
  return (
    <section className="card consent" aria-labelledby="consent-title">
      <h1 id="consent-title">Allow {name} to use Bindery as you?</h1>
      <p className="hint">Signed in as {user.name}.</p>
      <dl className="facts">
        <dt>Client</dt>
        <dd>
          <strong>{name}</strong>
          <br />
          <code>{data.client.client_id}</code> ({CLIENT_KINDS[data.client.kind]})
        </dd>
        <dt>Sends you back to</dt>
        <dd>
          <code>{data.client.redirect_host}</code>
        </dd>
        <dt>{data.resources.length === 1 ? 'Exposure' : 'Exposures'}</dt>
        <dd>
          <ul>
            {data.resources.map((r) => (
              <li key={r.resource}>
                <strong>{r.label}</strong> <code>{r.resource}</code>
                {!r.yours && <span className="warn"> — not yours: only Deny is possible</span>}
              </li>
            ))}
            {data.resources.length === 0 && <li>None named: this request cannot be allowed.</li>}
          </ul>
        </dd>
        <dt>It may</dt>
        <dd>
          <ul>
            {data.scopes.map((scope) => (
              <li key={scope}>
                {SCOPE_WORDS[scope] ?? scope} <code>{scope}</code>
              </li>
            ))}
            {data.offline && <li>keep access while you are away (refresh tokens), until you revoke it</li>}
          </ul>
        </dd>
      </dl>
      <ErrorMessage error={action.error} />
      <div className="actions">
        <button type="button" disabled={action.busy || !allYours} onClick={() => void decide(true)}>
          Allow
        </button>
        <button type="button" className="secondary" disabled={action.busy} onClick={() => void decide(false)}>
          Deny
        </button>
      </div>
      <p className="hint">You can revoke this at any time on your account page.</p>
    </section>
  );
}

/** The person's grants to OAuth clients, each revocable (on the account page). */
export function Grants() {
  const { data, error, loading, reload } = useLoad(
    () => api<OAuthGrantList>('GET', '/api/v2/oauth/grants'),
    [],
  );
  const action = useAction();
  const revoke = async (id: string) => {
    await action.run(() => api('DELETE', `/api/v2/oauth/grants/${encodeURIComponent(id)}`));
    await reload();
  };
  return (
    <section className="card grants" aria-labelledby="grants-title">
      <h2 id="grants-title">Agents you allowed</h2>
      <p className="hint">Clients that signed in as you with OAuth. Revoking one stops its tokens at once.</p>
      <ErrorMessage error={error ?? action.error} />
      {loading && !data && <p className="loading">Loading…</p>}
      {data && data.items.length === 0 && <p>None yet.</p>}
      {data && data.items.length > 0 && (
        <ul className="grant-list">
          {data.items.map((grant) => (
            <li key={grant.id}>
              <strong>{grant.client_name ?? grant.client_id}</strong>
              {grant.client_name && (
                <>
                  {' '}
                  <code>{grant.client_id}</code>
                </>
              )}
              <ul>
                {grant.resources.map((r) => (
                  <li key={r.resource}>
                    {r.label} <span className="hint">({r.scopes.join(', ')})</span>
                  </li>
                ))}
              </ul>
              <span className="hint">Since {new Date(grant.created_at).toLocaleString()}</span>{' '}
              <button
                type="button"
                className="danger small"
                disabled={action.busy}
                onClick={() => void revoke(grant.id)}
                aria-label={`Revoke ${grant.client_name ?? grant.client_id}`}
              >
                Revoke
              </button>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
