/**
 * The MCP SDK's view of one person's OAuth client state for one upstream server (its
 * `OAuthClientProvider`), for one step: a Connect, a callback, or a refresh. It keeps what the SDK
 * hands it in memory; the broker stores it once the step succeeded, so a failed step leaves
 * nothing behind. A step that would need the person (a new authorization during a call or a
 * refresh) throws NeedsPerson instead of redirecting anyone.
 */
import type {
  OAuthClientInformationContext,
  OAuthClientMetadata,
  OAuthClientProvider,
  OAuthDiscoveryState,
  StoredOAuthClientInformation,
  StoredOAuthTokens,
} from '@modelcontextprotocol/client';
import type { OAuthTarget } from './target.ts';

/** Raised inside the SDK's flow when a call or a refresh would need the person. */
export class NeedsPerson extends Error {}

/** What the provider needs of Bindery as an OAuth client (broker.ts). */
export interface ClientSide {
  redirectUrl(): string;
  clientMetadataUrl(): string | undefined;
  clientMetadata(): OAuthClientMetadata;
  registeredClient(target: OAuthTarget, issuer: string): Promise<StoredOAuthClientInformation | undefined>;
  saveRegisteredClient(
    target: OAuthTarget,
    issuer: string,
    client: StoredOAuthClientInformation,
  ): Promise<void>;
  forgetRegisteredClients(target: OAuthTarget): Promise<void>;
}

export interface StepState {
  /** A Connect: the browser may be sent to the authorization server. */
  interactive: boolean;
  state?: string;
  verifier?: string;
  discovery?: OAuthDiscoveryState | undefined;
  tokens?: StoredOAuthTokens | undefined;
  /** A connection's or a flow's own client (its tokens are issued to it, whatever registers since). */
  client?: StoredOAuthClientInformation | undefined;
}

export class StepProvider implements OAuthClientProvider {
  authorizationUrl: URL | undefined;
  verifier: string | undefined;
  discovery: OAuthDiscoveryState | undefined;
  saved: { tokens: StoredOAuthTokens; issuer: string } | undefined;
  /** The client the SDK used (what the tokens it gets are issued to). */
  client: StoredOAuthClientInformation | undefined;
  /** The SDK found the tokens dead (invalid_grant, an unknown client). */
  tokensInvalid = false;

  constructor(
    private readonly side: ClientSide,
    private readonly target: OAuthTarget,
    private readonly step: StepState,
  ) {
    this.discovery = step.discovery;
  }

  get redirectUrl(): string {
    return this.side.redirectUrl();
  }

  get clientMetadataUrl(): string | undefined {
    return this.side.clientMetadataUrl();
  }

  get clientMetadata(): OAuthClientMetadata {
    return this.side.clientMetadata();
  }

  state(): string {
    if (this.step.state === undefined) throw new NeedsPerson('no authorization is under way');
    return this.step.state;
  }

  async clientInformation(
    ctx?: OAuthClientInformationContext,
  ): Promise<StoredOAuthClientInformation | undefined> {
    if (this.target.clientId !== null) {
      return {
        client_id: this.target.clientId,
        ...(this.target.clientSecret !== null && { client_secret: this.target.clientSecret }),
      };
    }
    if (this.step.client) {
      this.client = this.step.client;
      return this.client;
    }
    if (!ctx?.issuer) return undefined;
    this.client = await this.side.registeredClient(this.target, ctx.issuer);
    return this.client;
  }

  async saveClientInformation(
    information: StoredOAuthClientInformation,
    ctx?: OAuthClientInformationContext,
  ): Promise<void> {
    // A pre-registered client is the administrator's: nothing to keep.
    if (this.target.clientId !== null) return;
    const issuer = ctx?.issuer ?? information.issuer;
    this.client = information;
    if (issuer) await this.side.saveRegisteredClient(this.target, issuer, information);
  }

  tokens(): StoredOAuthTokens | undefined {
    return this.tokensInvalid ? undefined : (this.saved?.tokens ?? this.step.tokens);
  }

  saveTokens(tokens: StoredOAuthTokens, ctx?: OAuthClientInformationContext): void {
    const issuer = ctx?.issuer ?? tokens.issuer ?? this.discovery?.authorizationServerUrl ?? '';
    this.saved = { tokens, issuer };
    this.tokensInvalid = false;
  }

  redirectToAuthorization(url: URL): void {
    if (!this.step.interactive) throw new NeedsPerson('the upstream needs the person to authorize again');
    this.authorizationUrl = url;
  }

  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }

  codeVerifier(): string {
    if (this.step.verifier === undefined) throw new NeedsPerson('no authorization is under way');
    return this.step.verifier;
  }

  saveDiscoveryState(state: OAuthDiscoveryState): void {
    this.discovery = state;
  }

  discoveryState(): OAuthDiscoveryState | undefined {
    return this.discovery;
  }

  async invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery'): Promise<void> {
    if (scope === 'all' || scope === 'tokens') this.tokensInvalid = true;
    if (scope === 'all' || scope === 'discovery') this.discovery = undefined;
    if ((scope === 'all' || scope === 'client') && this.target.clientId === null) {
      await this.side.forgetRegisteredClients(this.target);
    }
  }
}
