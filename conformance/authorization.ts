/**
 * The suite's authorization-server scenarios (`conformance authorization`) against the control
 * plane's built-in authorization server (decision 073): `authorization-server-metadata-endpoint`
 * and `authorization-code-grant`. The grant needs a person: the suite prints the authorization URL
 * and waits for its callback, and a headless Chromium opens that URL, signs the exposure's owner in
 * on the console and presses "Allow" on the consent screen. The client the suite acts as is
 * registered first (dynamic registration) with the suite's loopback callback as its redirect URI;
 * the resource is the exposure's keyless MCP URL.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import chromium from '@sparticuz/chromium';
import { freePort } from '@bindery/test-support';
import { chromium as playwright } from 'playwright-core';

export interface AuthorizationTarget {
  /** The authorization server's issuer (the control plane's URL). */
  issuer: string;
  /** The exposure's keyless MCP URL (the resource the token is for). */
  resource: string;
  /** The exposure owner's name and password (console sign-in). */
  person: { name: string; password: string };
}

/** Runs the scenarios; true when every one passed. */
export async function runAuthorizationScenarios(
  suite: { node: string; cli: string; dir: string },
  target: AuthorizationTarget,
): Promise<boolean> {
  const port = await freePort();
  const registered = await fetch(`${target.issuer}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'MCP conformance suite',
      redirect_uris: [`http://127.0.0.1:${port}/callback`],
      grant_types: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_method: 'none',
    }),
  });
  if (registered.status !== 201)
    throw new Error(`registering the suite's client answered ${registered.status}`);
  const clientId = ((await registered.json()) as { client_id: string }).client_id;

  const browser = await playwright.launch({
    executablePath: await chromium.executablePath(),
    args: ['--no-sandbox', '--disable-gpu'],
    headless: true,
  });
  try {
    console.log('\nconformance: authorization server scenarios');
    const run = spawn(
      suite.node,
      [
        suite.cli,
        'authorization',
        '--url',
        target.issuer,
        '--client-id',
        clientId,
        '--resource',
        target.resource,
        '--port',
        String(port),
        '-o',
        join(suite.dir, 'results', 'authorization'),
      ],
      {
        cwd: suite.dir,
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, PATH: `${join(suite.node, '..')}:${process.env.PATH ?? ''}` },
      },
    );
    let consented: Promise<void> | undefined;
    let output = '';
    run.stdout.setEncoding('utf8');
    run.stdout.on('data', (chunk: string) => {
      process.stdout.write(chunk);
      output += chunk;
      const url = /^(https?:\/\/\S+\/oauth\/authorize\?\S+)$/mu.exec(output)?.[1];
      if (url && !consented) {
        consented = consent(url).catch((error: unknown) => {
          console.error(`the browser could not consent: ${(error as Error).message}`);
          run.kill();
        });
      }
    });
    // The suite waits up to 5 minutes for the callback; this run gives it 2.
    const timer = setTimeout(() => run.kill(), 120_000);
    const status = await new Promise<number | null>((resolve) => run.on('exit', resolve));
    clearTimeout(timer);
    await consented;
    return status === 0;
  } finally {
    await browser.close();
  }

  /** The person's part: sign in on the console, then "Allow". */
  async function consent(url: string): Promise<void> {
    const page = await browser.newPage();
    await page.goto(url);
    await page.getByLabel('Name', { exact: true }).fill(target.person.name);
    await page.getByLabel('Password', { exact: true }).fill(target.person.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL(`http://127.0.0.1:${port}/callback**`);
    await page.close();
  }
}
