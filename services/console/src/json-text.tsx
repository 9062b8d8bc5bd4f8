/** JSON typed into a textarea: checked as it is typed, its problem said next to it. */
import { useId } from 'react';

export type Checked = { ok: true; value: unknown } | { ok: false; message: string };

export const pretty = (value: unknown) => JSON.stringify(value, null, 2);

/**
 * The text as JSON, or why it is not: empty text is `empty` (a message, or a value it stands for),
 * and a number too large for a double (which would be stored as null) is refused.
 */
export function checkJson(text: string, empty: { message: string } | { value: unknown }): Checked {
  if (text.trim() === '')
    return 'message' in empty ? { ok: false, message: empty.message } : { ok: true, value: empty.value };
  let tooLarge: string | null = null;
  try {
    const value: unknown = JSON.parse(text, (key, item: unknown) => {
      if (typeof item === 'number' && !Number.isFinite(item)) tooLarge ??= key;
      return item;
    });
    if (tooLarge !== null) {
      return { ok: false, message: `The number at "${tooLarge}" is too large to store.` };
    }
    return { ok: true, value };
  } catch (error) {
    return { ok: false, message: `Not valid JSON: ${(error as Error).message}` };
  }
}

/** A labelled JSON textarea with its check line (`checked` null: nothing said yet). */
export function JsonText({
  label,
  text,
  onChange,
  checked,
  validMessage = 'Valid JSON.',
  minRows = 4,
}: {
  label: string;
  text: string;
  onChange: (text: string) => void;
  checked: Checked | null;
  validMessage?: string;
  minRows?: number;
}) {
  const id = useId();
  return (
    <div className="json-editor">
      <label htmlFor={id}>{label}</label>
      <textarea
        id={id}
        value={text}
        onChange={(event) => onChange(event.target.value)}
        spellCheck={false}
        autoCapitalize="off"
        autoComplete="off"
        rows={Math.min(24, Math.max(minRows, text.split('\n').length + 1))}
        aria-invalid={checked !== null && !checked.ok}
        aria-describedby={`${id}-check`}
      />
      <p id={`${id}-check`} className={checked?.ok ? 'muted' : 'warn'} aria-live="polite">
        {checked === null ? '' : checked.ok ? validMessage : checked.message}
      </p>
    </div>
  );
}
