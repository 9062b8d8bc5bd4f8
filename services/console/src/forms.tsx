/** A labelled form control: the label names the control alone, a hint describes it. */
import {
  useId,
  type ChangeEvent,
  type InputHTMLAttributes,
  type ReactNode,
  type TextareaHTMLAttributes,
} from 'react';

export function Field({
  label,
  optional = false,
  hint,
  children,
}: {
  label: string;
  optional?: boolean;
  hint?: ReactNode;
  /** The control, given its id and the id of the hint (for aria-describedby). */
  children: (id: string, describedBy: string | undefined) => ReactNode;
}) {
  const id = useId();
  const hintId = hint === undefined ? undefined : `${id}-hint`;
  return (
    <div className="field">
      <span className="field-head">
        <label htmlFor={id}>{label}</label>
        {optional && <span className="muted"> (optional)</span>}
      </span>
      {children(id, hintId)}
      {hint !== undefined && (
        <span id={hintId} className="hint">
          {hint}
        </span>
      )}
    </div>
  );
}

type FieldProps = { label: string; optional?: boolean; hint?: ReactNode };

/**
 * What names, paths, URLs and code want (`literal`, the default): no spell check, no autocomplete.
 * `literal={false}` leaves the browser's own, for descriptions, numbers and other words.
 */
const literalText = (literal: boolean) => (literal ? { spellCheck: false, autoComplete: 'off' } : {});

/** A text field's props: the field's, the value and its setter, then the control's own attributes. */
type TextProps<Attributes> = FieldProps & {
  value: string;
  onChange: (value: string) => void;
  literal?: boolean;
} & Omit<Attributes, 'id' | 'value' | 'onChange' | 'aria-describedby'>;

/** A `Field` around a text control (input or textarea) the hint describes. */
function textField(
  { label, optional, hint, value, onChange, literal = true, ...attributes }: TextProps<object>,
  control: (props: {
    id: string;
    'aria-describedby': string | undefined;
    value: string;
    onChange: (event: ChangeEvent<HTMLInputElement | HTMLTextAreaElement>) => void;
  }) => ReactNode,
) {
  return (
    <Field label={label} optional={optional} hint={hint}>
      {(id, describedBy) =>
        control({
          id,
          'aria-describedby': describedBy,
          value,
          onChange: (event) => onChange(event.target.value),
          ...literalText(literal),
          ...attributes,
        })
      }
    </Field>
  );
}

/** A `Field` with a one-line text input. */
export function TextField(props: TextProps<InputHTMLAttributes<HTMLInputElement>>) {
  return textField(props, (control) => <input {...control} />);
}

/** A `Field` with a textarea. */
export function TextAreaField(props: TextProps<TextareaHTMLAttributes<HTMLTextAreaElement>>) {
  return textField(props, (control) => <textarea {...control} />);
}

/** An option of a `SelectField`: a value shown as itself, or a value with its label. */
export type SelectOption<T extends string> = T | { value: T; label: string };

/** A `Field` with a select of the options given, in order; the hint describes it. */
export function SelectField<T extends string>({
  label,
  optional,
  hint,
  value,
  onChange,
  options,
  required,
  disabled,
}: FieldProps & {
  value: T;
  onChange: (value: T) => void;
  options: readonly SelectOption<T>[];
  required?: boolean;
  disabled?: boolean;
}) {
  return (
    <Field label={label} optional={optional} hint={hint}>
      {(id, describedBy) => (
        <select
          id={id}
          aria-describedby={describedBy}
          value={value}
          onChange={(event) => onChange(event.target.value as T)}
          required={required}
          disabled={disabled}
        >
          {options.map((option) => {
            const item = typeof option === 'string' ? { value: option, label: option } : option;
            return (
              <option key={item.value} value={item.value}>
                {item.label}
              </option>
            );
          })}
        </select>
      )}
    </Field>
  );
}

/** A checkbox inside its label (`label.check`, or the class given). */
export function CheckField({
  checked,
  onChange,
  disabled,
  className = 'check',
  children,
}: {
  checked: boolean;
  onChange: (checked: boolean) => void;
  disabled?: boolean;
  className?: string;
  children: ReactNode;
}) {
  return (
    <label className={className}>
      <input
        type="checkbox"
        checked={checked}
        disabled={disabled}
        onChange={(event) => onChange(event.target.checked)}
      />
      {children}
    </label>
  );
}

/** Options naming things by their `name`, valued by their `id` (tables, projects…). */
export const namedOptions = (items: readonly { id: string; name: string }[]) =>
  items.map((item) => ({ value: item.id, label: item.name }));

/** The JSON path of a context: a JSON Pointer into a table's data. */
export function JsonPathField({ value, onChange }: { value: string; onChange: (value: string) => void }) {
  return (
    <TextField
      label="JSON path"
      hint="A JSON Pointer into the table’s data, such as /customers; empty for all of it."
      value={value}
      onChange={onChange}
      placeholder="/customers"
    />
  );
}

/** One of a few options as radio buttons in a `fieldset.choice`, each inside its label. */
export function RadioChoice<T extends string>({
  legend,
  value,
  onChange,
  options,
}: {
  legend: string;
  value: T;
  onChange: (value: T) => void;
  options: readonly { value: T; label: ReactNode }[];
}) {
  const name = useId();
  return (
    <fieldset className="choice">
      <legend>{legend}</legend>
      {options.map((option) => (
        <label key={option.value} className="inline">
          <input
            type="radio"
            name={name}
            value={option.value}
            checked={value === option.value}
            onChange={() => onChange(option.value)}
          />
          {option.label}
        </label>
      ))}
    </fieldset>
  );
}

/** The name of something new or renamed: required, at most 200 characters, no autocomplete. */
export function NameField({
  label,
  value,
  onChange,
}: {
  label: string;
  value: string;
  onChange: (value: string) => void;
}) {
  return (
    <TextField
      label={label}
      value={value}
      onChange={onChange}
      required
      maxLength={200}
      literal={false}
      autoComplete="off"
    />
  );
}

/** A form's last row: its submit button (`busyLabel` while busy) and "Close". */
export function SubmitAndClose({
  label,
  busyLabel,
  busy,
  disabled = busy,
  onClose,
}: {
  label: string;
  busyLabel: string;
  busy: boolean;
  disabled?: boolean;
  onClose: () => void;
}) {
  return (
    <div className="actions">
      <button type="submit" disabled={disabled}>
        {busy ? busyLabel : label}
      </button>
      <button type="button" className="secondary" onClick={onClose}>
        Close
      </button>
    </div>
  );
}
