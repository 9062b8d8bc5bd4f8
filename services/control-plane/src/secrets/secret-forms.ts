/**
 * The forms a secret's value takes in the text an API or a tool sends back: APIs echo credentials
 * as they came (a header, a query string), and often encoded (a Basic authorization is base64, a
 * signature input is hex, a URL is percent-encoded). Redaction looks for each of these forms, so
 * they are computed once per resolved value here, not per answer.
 *
 * Covered: the value as is and JSON-escaped; percent-encoded (upper- or lower-case escapes, `+`
 * for a space as forms write it, and `encodeURI`'s lighter form); base64 and base64url, padded or
 * not; hex in either case. Base64 inside a longer base64 text (`user:password` encoded as one)
 * depends on where the value starts: for each of the three alignments, the run of characters that
 * only the value's bits decide is a form too (the one or two characters at each end that share
 * bits with the neighbours stay). Not covered: any other encoding, encryption or hashing, a value
 * split or transformed (reversed, case-changed, spaced), and encodings of encodings.
 */

/** The distinct non-empty forms of `value`, in no particular order. */
export function secretForms(value: string): string[] {
  const bytes = Buffer.from(value, 'utf8');
  const percent = encodeURIComponent(value);
  const base64 = bytes.toString('base64');
  const unpadded = base64.replace(/=+$/, '');
  // Node writes base64url without padding; some encoders keep it.
  const base64url = bytes.toString('base64url');
  const hex = bytes.toString('hex');
  const forms = [
    value,
    JSON.stringify(value).slice(1, -1),
    percent,
    percent.replace(/%[0-9A-F]{2}/g, (escape) => escape.toLowerCase()),
    new URLSearchParams([['', value]]).toString().slice(1),
    encodeURI(value),
    base64,
    unpadded,
    base64url,
    base64url + base64.slice(unpadded.length),
    hex,
    hex.toUpperCase(),
  ];
  for (const core of embeddedBase64(bytes)) forms.push(core, toBase64Url(core));
  return [...new Set(forms)].filter((form) => form !== '');
}

/**
 * For each alignment of the value inside a longer base64 text (0, 1 or 2 bytes before it in its
 * group of three), the characters whose six bits all come from the value.
 */
function embeddedBase64(bytes: Buffer): string[] {
  const cores: string[] = [];
  for (let before = 0; before < 3; before += 1) {
    const text = Buffer.concat([Buffer.alloc(before), bytes]).toString('base64');
    const first = Math.ceil((8 * before) / 6);
    const end = Math.floor((8 * (before + bytes.length)) / 6);
    if (end > first) cores.push(text.slice(first, end));
  }
  return cores;
}

const toBase64Url = (base64: string) => base64.replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
