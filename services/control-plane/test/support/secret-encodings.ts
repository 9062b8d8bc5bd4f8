/**
 * A secret in the encodings an API may echo it in, for redaction tests: each standalone (the
 * whole text is the encoded value, redacted to the marker alone) and inside longer base64 texts at
 * each of the three alignments (what is left around the marker encodes only the neighbours).
 */

/** Encodings in which the whole text is the value. */
export function standaloneEncodings(value: string): Record<string, string> {
  const bytes = Buffer.from(value, 'utf8');
  const percent = encodeURIComponent(value);
  return {
    base64: bytes.toString('base64'),
    base64_unpadded: bytes.toString('base64').replace(/=+$/, ''),
    base64url: bytes.toString('base64url'),
    percent,
    percent_lower: percent.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
    form: new URLSearchParams({ k: value }).toString().slice(2),
    hex: bytes.toString('hex'),
    hex_upper: bytes.toString('hex').toUpperCase(),
  };
}

/** The value inside longer base64 texts: 0, 1 and 2 bytes before it in its group of three. */
export function embeddedEncodings(value: string): Record<string, string> {
  const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
  return {
    first: base64(`${value}:tail`),
    after_one: base64(`x${value}`),
    basic_auth: base64(`user:${value}`),
    basic_auth_url: base64(`user:${value}:more`).replaceAll('+', '-').replaceAll('/', '_'),
  };
}

/** What an encoding inside a longer base64 text may keep once redacted: its neighbours' characters. */
export const redactedInside = (marker: string) =>
  new RegExp(`^[A-Za-z0-9+/=_-]{0,12}${marker.replace(/[[\]]/g, '\\$&')}[A-Za-z0-9+/=_-]{0,12}$`);
