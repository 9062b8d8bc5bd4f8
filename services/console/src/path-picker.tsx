/**
 * Picks a JSON path from a table's data: its objects and arrays as a tree (a few levels, a bounded
 * number of nodes), each with a button that takes its JSON Pointer. The data is loaded when the
 * picker is opened, not before.
 */
import { useState } from 'react';
import type { Table } from '@bindery/contracts';
import { api } from './api.ts';
import { ErrorMessage, useLoad } from './ui.tsx';

/** Levels shown below the root, and nodes shown in all: a large table stays a short list. */
const MAX_DEPTH = 4;
const MAX_NODES = 300;
/** Items of an array offered (the rest summed up): tools usually work on the array itself. */
const MAX_ITEMS = 5;

/** RFC 6901: "~" and "/" in a member's name are escaped. */
const pointerPart = (name: string) => name.replace(/~/g, '~0').replace(/\//g, '~1');

interface Node {
  pointer: string;
  label: string;
  summary: string;
  depth: number;
}

/** The containers of `value`, depth first, within the bounds; `more` says some were left out. */
function containers(value: unknown): { nodes: Node[]; more: boolean } {
  const nodes: Node[] = [];
  let more = false;
  const visit = (item: unknown, pointer: string, label: string, depth: number) => {
    if (item === null || typeof item !== 'object') return;
    if (nodes.length >= MAX_NODES) {
      more = true;
      return;
    }
    const entries = Array.isArray(item)
      ? item.map((child, index) => [String(index), child] as const)
      : Object.entries(item as Record<string, unknown>);
    const summary = Array.isArray(item) ? `array of ${entries.length}` : `object of ${entries.length}`;
    nodes.push({ pointer, label, summary, depth });
    if (depth >= MAX_DEPTH) return;
    const shown = Array.isArray(item) ? entries.slice(0, MAX_ITEMS) : entries;
    if (shown.length < entries.length) more = true;
    for (const [key, child] of shown) visit(child, `${pointer}/${pointerPart(key)}`, key, depth + 1);
  };
  visit(value, '', '(the whole table)', 0);
  return { nodes, more };
}

function PickerTree({ tableId, onPick }: { tableId: string; onPick: (pointer: string) => void }) {
  const table = useLoad(() => api<Table>('GET', `/api/v2/tables/${encodeURIComponent(tableId)}`), [tableId]);
  if (table.error) return <ErrorMessage error={table.error} />;
  if (!table.data) return <p className="loading">Loading the table…</p>;
  const { nodes, more } = containers(table.data.data);
  if (nodes.length === 0) return <p className="muted">The table holds no object or array to pick.</p>;
  return (
    <>
      <ul className="path-picker" aria-label="Paths in the table">
        {nodes.map((node) => (
          <li key={node.pointer} style={{ paddingLeft: `${node.depth * 1.25}rem` }}>
            <button type="button" className="secondary small" onClick={() => onPick(node.pointer)}>
              Use {node.pointer === '' ? 'the whole table' : node.pointer}
            </button>{' '}
            <span className="muted">{node.summary}</span>
          </li>
        ))}
      </ul>
      {more && <p className="muted">Deeper or further items are left out: type their path.</p>}
    </>
  );
}

export function PathPicker({ tableId, onPick }: { tableId: string; onPick: (pointer: string) => void }) {
  const [open, setOpen] = useState(false);
  return (
    <details className="picker" onToggle={(event) => setOpen(event.currentTarget.open)}>
      <summary>Pick the path from the table’s data</summary>
      {open && tableId !== '' && <PickerTree key={tableId} tableId={tableId} onPick={onPick} />}
    </details>
  );
}
