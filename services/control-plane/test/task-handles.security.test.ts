// Pins what a task handle (decision 071) lets an agent do: open to where its task lives only for
// the exposure, caller and credential it was sealed for; reveal nothing of the upstream's task id
// or server; refuse any alteration; open on every control plane that shares the internal token,
// and on none that does not.
import { describe, expect, it } from 'vitest';
import { TaskHandles } from '../src/execution/task-handles.ts';

const holder = { aeiId: 'aei_1', caller: null, holder: 'key-digest-1' };
// Each value long enough that a random handle cannot contain it by chance (a two-character
// instance name turned up in about one handle in forty).
const place = { serverId: 'ups_secret_server', instance: 'instance-3-of-pool', taskId: 'upstream-task-7f3a' };

describe('a task handle', () => {
  const handles = new TaskHandles('internal-token');
  const handle = handles.seal(holder, place)!;

  it('opens to its task for its holder, on any control plane sharing the token', () => {
    expect(handle).toMatch(/^bt1\.[A-Za-z0-9_-]+$/);
    expect(handles.open(handle, holder)).toEqual(place);
    expect(new TaskHandles('internal-token').open(handle, holder)).toEqual(place);
  });

  it('shows nothing of the upstream task or server it names', () => {
    const body = Buffer.from(handle.slice(4), 'base64url').toString('latin1');
    for (const secret of [place.serverId, place.taskId, place.instance]) {
      expect(handle).not.toContain(secret);
      expect(body).not.toContain(secret);
    }
    // Two handles of one task differ (a fresh nonce each): one cannot be told from another's.
    expect(handles.seal(holder, place)).not.toBe(handle);
  });

  it('opens to nothing for another exposure, caller or credential, or under another token', () => {
    expect(handles.open(handle, { ...holder, aeiId: 'aei_2' })).toBeUndefined();
    expect(handles.open(handle, { ...holder, caller: 'ada' })).toBeUndefined();
    expect(handles.open(handle, { ...holder, holder: 'key-digest-2' })).toBeUndefined();
    expect(new TaskHandles('another-token').open(handle, holder)).toBeUndefined();
  });

  it('opens to nothing once altered, cut, or when it is no handle at all', () => {
    const bytes = Buffer.from(handle.slice(4), 'base64url');
    for (let at = 0; at < bytes.length; at += 7) {
      const altered = Buffer.from(bytes);
      altered[at] = altered[at]! ^ 1;
      expect(handles.open(`bt1.${altered.toString('base64url')}`, holder)).toBeUndefined();
    }
    for (const bad of [
      handle.slice(0, -4),
      'bt1.',
      'bt1.AAAA',
      'bt2.' + handle.slice(4),
      '',
      'no-such-task',
    ]) {
      expect(handles.open(bad, holder)).toBeUndefined();
    }
  });

  it('is not made when it would be longer than a client may send back', () => {
    expect(handles.seal(holder, { ...place, taskId: 'x'.repeat(5000) })).toBeUndefined();
  });
});
