/**
 * Arguments for a tool, as a form made from its input schema: one control per top-level property
 * (text, number, a switch, a choice of its enum; JSON for objects, arrays and anything else), and a
 * JSON editor for the whole object instead, for schemas a form cannot show. The server checks the
 * arguments against the schema: the form only helps to type them.
 */
import { useMemo, useState } from 'react';
import { Field } from './forms.tsx';
import { checkJson, JsonText, pretty, type Checked } from './json-text.tsx';

type Schema = Record<string, unknown>;

interface Property {
  name: string;
  schema: Schema;
  required: boolean;
  control: 'text' | 'number' | 'boolean' | 'enum' | 'json';
}

function controlOf(schema: Schema): Property['control'] {
  if (Array.isArray(schema.enum) && schema.enum.every((item) => typeof item === 'string')) return 'enum';
  if (schema.type === 'string') return 'text';
  if (schema.type === 'number' || schema.type === 'integer') return 'number';
  if (schema.type === 'boolean') return 'boolean';
  return 'json';
}

/** The top-level properties a form can show, or null when it cannot (then JSON only). */
export function propertiesOf(schema: unknown): Property[] | null {
  if (schema === null || typeof schema !== 'object') return null;
  const object = schema as Schema;
  const properties = object.properties;
  if (properties === undefined) return object.type === 'object' ? [] : null;
  if (properties === null || typeof properties !== 'object') return null;
  const required = Array.isArray(object.required) ? (object.required as unknown[]) : [];
  return Object.entries(properties as Record<string, unknown>).map(([name, item]) => {
    const schemaOf = item !== null && typeof item === 'object' ? (item as Schema) : {};
    return { name, schema: schemaOf, required: required.includes(name), control: controlOf(schemaOf) };
  });
}

/** The form's texts as arguments: blanks left out, numbers and JSON parsed (or why not). */
function argumentsOf(
  properties: Property[],
  texts: Record<string, string>,
  flags: Record<string, boolean>,
): Checked {
  const args: Record<string, unknown> = {};
  for (const property of properties) {
    if (property.control === 'boolean') {
      if (property.name in flags) args[property.name] = flags[property.name];
      continue;
    }
    const text = texts[property.name] ?? '';
    if (text.trim() === '') continue;
    if (property.control === 'number') {
      const value = Number(text);
      if (!Number.isFinite(value)) return { ok: false, message: `${property.name}: not a number.` };
      args[property.name] = value;
    } else if (property.control === 'json') {
      const checked = checkJson(text, { value: undefined });
      if (!checked.ok) return { ok: false, message: `${property.name}: ${checked.message}` };
      args[property.name] = checked.value;
    } else {
      args[property.name] = text;
    }
  }
  return { ok: true, value: args };
}

/** The form's texts for these arguments (switching from the JSON editor back to the form). */
function textsOf(properties: Property[], args: Record<string, unknown>) {
  const texts: Record<string, string> = {};
  const flags: Record<string, boolean> = {};
  for (const property of properties) {
    const value = args[property.name];
    if (value === undefined) continue;
    if (property.control === 'boolean' && typeof value === 'boolean') flags[property.name] = value;
    else if (property.control === 'json' || typeof value !== 'string') texts[property.name] = pretty(value);
    else texts[property.name] = value;
  }
  return { texts, flags };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The arguments as typed: `checked` is what would be sent, or why nothing can be. */
export function useArguments(schema: unknown) {
  const properties = useMemo(() => propertiesOf(schema), [schema]);
  const [mode, setMode] = useState<'form' | 'json'>(properties === null ? 'json' : 'form');
  const [texts, setTexts] = useState<Record<string, string>>({});
  const [flags, setFlags] = useState<Record<string, boolean>>({});
  const [json, setJson] = useState('{}');
  const checked = useMemo<Checked>(() => {
    if (mode === 'form' && properties !== null) return argumentsOf(properties, texts, flags);
    const parsed = checkJson(json, { value: {} });
    if (parsed.ok && !isObject(parsed.value)) return { ok: false, message: 'Arguments are a JSON object.' };
    return parsed;
  }, [mode, properties, texts, flags, json]);
  const switchTo = (next: 'form' | 'json') => {
    if (next === mode) return;
    if (next === 'json') {
      if (checked.ok) setJson(pretty(checked.value));
    } else if (properties !== null && checked.ok && isObject(checked.value)) {
      const filled = textsOf(properties, checked.value);
      setTexts(filled.texts);
      setFlags(filled.flags);
    }
    setMode(next);
  };
  return { properties, mode, switchTo, texts, setTexts, flags, setFlags, json, setJson, checked };
}

export function ArgumentsEditor({ state }: { state: ReturnType<typeof useArguments> }) {
  const { properties, mode, switchTo, texts, setTexts, flags, setFlags, json, setJson, checked } = state;
  return (
    <div className="arguments">
      <div className="mode-switch" role="group" aria-label="Edit the arguments as">
        <button
          type="button"
          className="secondary small"
          aria-pressed={mode === 'form'}
          disabled={properties === null}
          onClick={() => switchTo('form')}
        >
          Form
        </button>
        <button
          type="button"
          className="secondary small"
          aria-pressed={mode === 'json'}
          onClick={() => switchTo('json')}
        >
          JSON
        </button>
      </div>
      {mode === 'json' || properties === null ? (
        <JsonText label="Arguments (JSON)" text={json} onChange={setJson} checked={checked} />
      ) : properties.length === 0 ? (
        <p className="muted">This tool takes no arguments.</p>
      ) : (
        <div className="form-grid">
          {properties.map((property) => {
            const hint =
              typeof property.schema.description === 'string' ? property.schema.description : undefined;
            const label = `${property.name}${property.control === 'json' ? ' (JSON)' : ''}`;
            const setText = (text: string) =>
              setTexts((previous) => ({ ...previous, [property.name]: text }));
            return (
              <Field key={property.name} label={label} optional={!property.required} hint={hint}>
                {(id, describedBy) =>
                  property.control === 'boolean' ? (
                    <select
                      id={id}
                      aria-describedby={describedBy}
                      value={property.name in flags ? String(flags[property.name]) : ''}
                      onChange={(event) =>
                        setFlags((previous) => {
                          const next = { ...previous };
                          if (event.target.value === '') delete next[property.name];
                          else next[property.name] = event.target.value === 'true';
                          return next;
                        })
                      }
                    >
                      <option value="">(not sent)</option>
                      <option value="true">true</option>
                      <option value="false">false</option>
                    </select>
                  ) : property.control === 'enum' ? (
                    <select
                      id={id}
                      aria-describedby={describedBy}
                      value={texts[property.name] ?? ''}
                      onChange={(event) => setText(event.target.value)}
                    >
                      <option value="">(not sent)</option>
                      {(property.schema.enum as string[]).map((item) => (
                        <option key={item} value={item}>
                          {item}
                        </option>
                      ))}
                    </select>
                  ) : property.control === 'json' ? (
                    <textarea
                      id={id}
                      aria-describedby={describedBy}
                      value={texts[property.name] ?? ''}
                      rows={3}
                      spellCheck={false}
                      onChange={(event) => setText(event.target.value)}
                    />
                  ) : (
                    <input
                      id={id}
                      aria-describedby={describedBy}
                      inputMode={property.control === 'number' ? 'decimal' : undefined}
                      value={texts[property.name] ?? ''}
                      spellCheck={false}
                      autoComplete="off"
                      onChange={(event) => setText(event.target.value)}
                    />
                  )
                }
              </Field>
            );
          })}
          {!checked.ok && (
            <p className="warn" role="status">
              {checked.message}
            </p>
          )}
        </div>
      )}
    </div>
  );
}
