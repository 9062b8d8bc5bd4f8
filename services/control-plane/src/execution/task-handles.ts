/**
 * The handle an agent is given for a task an upstream server made (the MCP tasks extension,
 * decision 071): the upstream's own task id, the server and the instance that made it, sealed with
 * AES-256-GCM under a key every control plane derives from the internal token they share (HKDF),
 * so any control plane can open it, no agent can read or forge one, and Bindery stores nothing per
 * task. A handle is bound to the exposure, the caller of a caller entry and the credential the call
 * came with (`holder`, a digest the gateway gives): brought with another, it opens to nothing, and
 * the agent is told the task is not found, as for a handle never handed out.
 */
import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';
import { MAX_TASK_HANDLE_CHARS } from '@bindery/contracts';

const VERSION = 'bt1';
const LABEL = 'bindery task handle';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Who a handle is for: the call's exposure, caller (null for an api key) and credential digest. */
export interface TaskHolder {
  aeiId: string;
  caller: string | null;
  holder: string;
}

/** Where a task lives: the server, the instance that made it (pool.ts TaskRef), the upstream's id. */
export interface TaskPlace {
  serverId: string;
  instance: string;
  taskId: string;
}

export class TaskHandles {
  readonly #key: Buffer;

  /** `secret`: the internal token (absent: a key of this process alone, for a single control plane). */
  constructor(secret: string | undefined) {
    const input = secret === undefined ? randomBytes(32) : Buffer.from(secret, 'utf8');
    this.#key = Buffer.from(hkdfSync('sha256', input, Buffer.alloc(0), LABEL, 32));
  }

  /** A handle for `place`, good for `holder` only; undefined when it would be too long to hand out. */
  seal(holder: TaskHolder, place: TaskPlace): string | undefined {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    // The holder is authenticated with the handle but not carried in it.
    cipher.setAAD(holderDigest(holder));
    const plain = Buffer.from(JSON.stringify([place.serverId, place.instance, place.taskId]), 'utf8');
    const sealed = Buffer.concat([iv, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
    const handle = `${VERSION}.${sealed.toString('base64url')}`;
    return handle.length > MAX_TASK_HANDLE_CHARS ? undefined : handle;
  }

  /** Where the task of `handle` lives, when it was sealed for `holder` and is intact; else undefined. */
  open(handle: string, holder: TaskHolder): TaskPlace | undefined {
    if (!handle.startsWith(`${VERSION}.`)) return undefined;
    const sealed = Buffer.from(handle.slice(VERSION.length + 1), 'base64url');
    if (sealed.length < IV_BYTES + TAG_BYTES + 1) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, sealed.subarray(0, IV_BYTES));
      decipher.setAAD(holderDigest(holder));
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      const plain = Buffer.concat([
        decipher.update(sealed.subarray(IV_BYTES, sealed.length - TAG_BYTES)),
        decipher.final(),
      ]);
      const [serverId, instance, taskId] = JSON.parse(plain.toString('utf8')) as string[];
      if (typeof serverId !== 'string' || typeof instance !== 'string' || typeof taskId !== 'string')
        return undefined;
      return { serverId, instance, taskId };
    } catch {
      // Altered, another holder's, or sealed under another key.
      return undefined;
    }
  }
}

function holderDigest(holder: TaskHolder): Buffer {
  return createHash('sha256')
    .update(JSON.stringify([holder.aeiId, holder.caller, holder.holder]))
    .digest();
}
