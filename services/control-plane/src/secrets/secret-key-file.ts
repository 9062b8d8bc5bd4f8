/**
 * Where the secrets' key comes from at start. BINDERY_SECRET_KEY when set (its earlier values in
 * BINDERY_SECRET_OLD_KEYS). Otherwise, on the embedded database, a key generated once into the
 * data directory (`secret.key`, mode 0600) and reused by every later start, so a local install
 * keeps its secrets without configuration; once an operator sets BINDERY_SECRET_KEY there, the
 * generated key stays readable as an old key. On PostgreSQL without a key, there is none: the
 * secrets API answers NOT_CONFIGURED until one is set.
 */
import { randomBytes } from 'node:crypto';
import { open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ENCRYPTION_KEY_BYTES, decodeEncryptionKey } from '@bindery/service-kit/settings';
import { ConfigError } from '../config.ts';
import { SecretKeyring } from './secret-keyring.ts';

export const SECRET_KEY_FILE = 'secret.key';

/** The data directory's key, or undefined when it has none. A file that holds no key refuses the start. */
async function readKeyFile(path: string): Promise<Uint8Array | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  const key = decodeEncryptionKey(text);
  if (!key) {
    // Never replaced silently: the secrets written with the lost key would be unreadable.
    throw new ConfigError(
      `${path} does not hold a secret key (${ENCRYPTION_KEY_BYTES} bytes as base64 or hex): restore it from a backup, or set BINDERY_SECRET_KEY`,
    );
  }
  return key;
}

/** Creates the key file (owner read/write only); another process creating it first wins. */
async function createKeyFile(path: string): Promise<Uint8Array> {
  const key = randomBytes(ENCRYPTION_KEY_BYTES);
  let file;
  try {
    file = await open(path, 'wx', 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return (await readKeyFile(path))!;
    throw error;
  }
  try {
    await file.writeFile(`${key.toString('base64')}\n`);
    await file.sync();
  } finally {
    await file.close();
  }
  return key;
}

export interface SecretKeySources {
  /** BINDERY_SECRET_KEY. */
  secretKey: Uint8Array | undefined;
  /** BINDERY_SECRET_OLD_KEYS. */
  secretOldKeys: readonly Uint8Array[];
  /** The embedded database's directory; undefined on PostgreSQL (and for in-memory PGlite). */
  dataDir: string | undefined;
}

/**
 * The keyring of this start (undefined when there is no key), and whether a key was generated
 * just now (to say so in the log).
 */
export async function openSecretKeyring(
  sources: SecretKeySources,
): Promise<{ keyring: SecretKeyring | undefined; generated: boolean; keyFile?: string }> {
  const keyFile = sources.dataDir === undefined ? undefined : join(sources.dataDir, SECRET_KEY_FILE);
  if (sources.secretKey) {
    const generatedKey = keyFile === undefined ? undefined : await readKeyFile(keyFile);
    const old = generatedKey ? [...sources.secretOldKeys, generatedKey] : sources.secretOldKeys;
    return { keyring: new SecretKeyring(sources.secretKey, old), generated: false };
  }
  if (keyFile === undefined) return { keyring: undefined, generated: false };
  const existing = await readKeyFile(keyFile);
  const key = existing ?? (await createKeyFile(keyFile));
  return { keyring: new SecretKeyring(key, sources.secretOldKeys), generated: !existing, keyFile };
}
