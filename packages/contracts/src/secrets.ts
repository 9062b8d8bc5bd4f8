/**
 * Wire shapes of the secrets API (`/api/v2/secrets`): a user's named secrets, written with a value
 * and read back without it (name and timestamps only). Tools refer to a secret as
 * `{{secret.NAME}}`.
 */
import { Type, type Static, type TSchema } from 'typebox';

const Timestamp = Type.String({ format: 'date-time' });
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

export const SECRET_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]{0,63}$';
export const SECRET_NAME_RE = new RegExp(SECRET_NAME_PATTERN);
/** Largest secret value, in bytes of UTF-8. */
export const MAX_SECRET_VALUE_BYTES = 64 * 1024;
/**
 * Shortest secret value, in characters. Values are taken out of every answer a tool gives; a
 * shorter one is ordinary text (a letter, a word, a year), and replacing it everywhere would both
 * garble answers and show, by where the markers fall, what the value is.
 */
export const MIN_SECRET_VALUE_CHARS = 8;

export const SecretName = Type.String({
  pattern: SECRET_NAME_PATTERN,
  description: 'letters, digits and underscores, not starting with a digit; at most 64',
});
const SecretValue = Type.String({
  // The schema refuses only "": the domain refuses what is under MIN_SECRET_VALUE_CHARS with a
  // message saying why. Characters bound the parse; the byte bound is checked after.
  minLength: 1,
  maxLength: MAX_SECRET_VALUE_BYTES,
  description: `the secret itself, at least ${MIN_SECRET_VALUE_CHARS} characters and at most ${MAX_SECRET_VALUE_BYTES} bytes of UTF-8; never answered back`,
});

export const CreateSecretBody = Type.Object(
  { name: SecretName, value: SecretValue },
  { additionalProperties: false },
);
export type CreateSecretBody = Static<typeof CreateSecretBody>;
export const UpdateSecretBody = Type.Object({ value: SecretValue }, { additionalProperties: false });
export type UpdateSecretBody = Static<typeof UpdateSecretBody>;
export const SecretParams = Type.Object({ name: SecretName });

/** A secret as the API shows it: never its value. */
export const Secret = Type.Object(
  {
    name: Type.String(),
    created_at: Timestamp,
    updated_at: Type.String({ format: 'date-time', description: 'when its value was last set' }),
    last_used_at: Nullable(
      Type.String({ format: 'date-time', description: 'when a tool last used it (to the minute)' }),
    ),
  },
  { additionalProperties: false },
);
export type Secret = Static<typeof Secret>;
