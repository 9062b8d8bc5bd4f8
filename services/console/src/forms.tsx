/** A labelled form control: the label names the control alone, a hint describes it. */
import { useId, type ReactNode } from 'react';

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
