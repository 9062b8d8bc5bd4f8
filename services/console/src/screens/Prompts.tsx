/**
 * An exposure's prompt templates (`/api/v2/aeis/{id}/prompts`): listed, made, edited and deleted.
 * A message's text may hold `{{argument}}` placeholders; the server checks each names an argument
 * and says which does not.
 */
import { useState, type FormEvent } from 'react';
import type { CreatePromptBody, Prompt, PromptArgument, PromptMessage } from '@bindery/contracts';
import { api } from '../api.ts';
import { CheckField, SelectField, TextAreaField, TextField } from '../forms.tsx';
import { ErrorMessage, LoadMore, Notice, useAction, usePaged } from '../ui.tsx';
import './editing.css';

export function Prompts({ aeiPath }: { aeiPath: string }) {
  const prompts = usePaged<Prompt>(`${aeiPath}/prompts`);
  /** The prompt being edited ('new' for a new one). */
  const [editing, setEditing] = useState<Prompt | 'new' | null>(null);
  const { error, run } = useAction();
  const [notice, setNotice] = useState<string | null>(null);
  const remove = (prompt: Prompt) =>
    run(async () => {
      await api('DELETE', `${aeiPath}/prompts/${encodeURIComponent(prompt.id)}`);
      setNotice(`Deleted ${prompt.name}.`);
      prompts.reload();
    });
  return (
    <section className="card" aria-labelledby="prompts">
      <h2 id="prompts">Prompts</h2>
      <p className="muted">
        Templates agents get with <code>prompts/get</code>, their <code>{'{{argument}}'}</code> placeholders
        filled in.
      </p>
      <ErrorMessage error={prompts.error ?? error} />
      {notice && <Notice>{notice}</Notice>}
      {prompts.items.length === 0 && !prompts.loading && !prompts.error && <p>No prompts yet.</p>}
      {prompts.items.length > 0 && (
        <ul className="prompt-list" data-testid="prompt-list">
          {prompts.items.map((prompt) => (
            <li key={prompt.id}>
              <code>{prompt.name}</code>
              {prompt.title && <span> {prompt.title}</span>}
              <span className="muted">
                {' '}
                · {prompt.arguments.length} arguments · {prompt.messages.length} messages
              </span>{' '}
              <button type="button" className="secondary small" onClick={() => setEditing(prompt)}>
                Edit {prompt.name}
              </button>{' '}
              <button type="button" className="secondary small" onClick={() => void remove(prompt)}>
                Delete {prompt.name}
              </button>
            </li>
          ))}
        </ul>
      )}
      <LoadMore hasMore={prompts.hasMore} loading={prompts.loading} onClick={prompts.loadMore} />
      {editing === null ? (
        <button type="button" onClick={() => setEditing('new')}>
          New prompt
        </button>
      ) : (
        <PromptForm
          key={editing === 'new' ? 'new' : editing.id}
          aeiPath={aeiPath}
          prompt={editing === 'new' ? null : editing}
          onSaved={(saved) => {
            setEditing(null);
            setNotice(`Saved ${saved.name}.`);
            prompts.reload();
          }}
          onClose={() => setEditing(null)}
        />
      )}
    </section>
  );
}

const NEW_MESSAGE: PromptMessage = { role: 'user', text: '' };

function PromptForm({
  aeiPath,
  prompt,
  onSaved,
  onClose,
}: {
  aeiPath: string;
  prompt: Prompt | null;
  onSaved: (prompt: Prompt) => void;
  onClose: () => void;
}) {
  const [name, setName] = useState(prompt?.name ?? '');
  const [title, setTitle] = useState(prompt?.title ?? '');
  const [description, setDescription] = useState(prompt?.description ?? '');
  const [args, setArgs] = useState<PromptArgument[]>(prompt?.arguments ?? []);
  const [messages, setMessages] = useState<PromptMessage[]>(prompt?.messages ?? [NEW_MESSAGE]);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const setArg = (index: number, change: Partial<PromptArgument>) =>
    setArgs((previous) => previous.map((item, i) => (i === index ? { ...item, ...change } : item)));
  const setMessage = (index: number, change: Partial<PromptMessage>) =>
    setMessages((previous) => previous.map((item, i) => (i === index ? { ...item, ...change } : item)));

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const body: CreatePromptBody = {
      name: name.trim(),
      title: title.trim() === '' ? null : title.trim(),
      description: description.trim() === '' ? null : description,
      arguments: args.map((arg) => ({
        name: arg.name.trim(),
        ...(arg.description && { description: arg.description }),
        ...(arg.required && { required: true }),
        ...(arg.choices && { choices: arg.choices }),
      })),
      messages,
    };
    setBusy(true);
    try {
      const saved =
        prompt === null
          ? await api<Prompt>('POST', `${aeiPath}/prompts`, { body })
          : await api<Prompt>('PATCH', `${aeiPath}/prompts/${encodeURIComponent(prompt.id)}`, { body });
      setError(null);
      onSaved(saved);
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };
  const label = prompt === null ? 'New prompt' : `Edit prompt ${prompt.name}`;
  return (
    <form className="form-grid prompt-form" onSubmit={(event) => void submit(event)} aria-label={label}>
      <h3>{label}</h3>
      <TextField
        label="Prompt name"
        hint="Letters, digits, “_”, “.” and “-”; unique in this exposure."
        value={name}
        onChange={setName}
        required
      />
      <TextField label="Title" optional value={title} onChange={setTitle} literal={false} />
      <TextAreaField
        label="Description"
        optional
        value={description}
        rows={2}
        onChange={setDescription}
        literal={false}
      />
      <fieldset>
        <legend>Arguments</legend>
        {args.length === 0 && <p className="muted">None.</p>}
        {args.map((arg, index) => (
          <div className="form-row" key={index}>
            <TextField
              label={`Argument ${index + 1} name`}
              value={arg.name}
              onChange={(value) => setArg(index, { name: value })}
            />
            <TextField
              label={`Argument ${index + 1} description`}
              optional
              value={arg.description ?? ''}
              onChange={(value) => setArg(index, { description: value })}
              literal={false}
            />
            <CheckField
              className="switch"
              checked={arg.required ?? false}
              onChange={(checked) => setArg(index, { required: checked })}
            >
              <span>Required</span>
            </CheckField>
            <button
              type="button"
              className="secondary small"
              onClick={() => setArgs((previous) => previous.filter((_, i) => i !== index))}
            >
              Remove argument {index + 1}
            </button>
          </div>
        ))}
        <button
          type="button"
          className="secondary small"
          onClick={() => setArgs((previous) => [...previous, { name: '' }])}
        >
          Add argument
        </button>
      </fieldset>
      <fieldset>
        <legend>Messages</legend>
        {messages.map((message, index) => (
          <div className="prompt-message" key={index}>
            <SelectField<PromptMessage['role']>
              label={`Message ${index + 1} role`}
              value={message.role}
              onChange={(role) => setMessage(index, { role })}
              options={['user', 'assistant']}
            />
            <TextAreaField
              label={`Message ${index + 1} text`}
              hint="{{name}} is replaced by the argument’s value."
              value={message.text}
              rows={3}
              onChange={(text) => setMessage(index, { text })}
              literal={false}
            />
            {messages.length > 1 && (
              <button
                type="button"
                className="secondary small"
                onClick={() => setMessages((previous) => previous.filter((_, i) => i !== index))}
              >
                Remove message {index + 1}
              </button>
            )}
          </div>
        ))}
        <button
          type="button"
          className="secondary small"
          onClick={() => setMessages((previous) => [...previous, NEW_MESSAGE])}
        >
          Add message
        </button>
      </fieldset>
      <ErrorMessage error={error} />
      <div className="actions">
        <button type="submit" disabled={busy || name.trim() === ''}>
          {busy ? 'Saving…' : 'Save prompt'}
        </button>
        <button type="button" className="secondary" onClick={onClose}>
          Cancel
        </button>
      </div>
    </form>
  );
}
