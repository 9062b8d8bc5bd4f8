/**
 * Secret redaction benchmark (hardening: encoded forms of secrets).
 *   pnpm --filter @bindery/bench bench:redaction
 * Every answer of an HTTP or custom tool has the values of its secrets taken out, in every form
 * secrets/secret-forms.ts lists. Prints p50/p99 per answer of `redactJson` on a JSON answer of
 * 8,000 records (56,000 strings) and of `redact` on the same answer as one 1.4 MB text, for one
 * secret, with (1) all its forms and (2) as the in-run reference, only the three forms redacted
 * before (as is, JSON-escaped, URL-encoded), through the same class. Rounds take turns path by
 * path, so drift on a shared machine hits all alike.
 * Environment: BENCH_ROUNDS (answers per path, default 200), BENCH_WARMUP (default 20).
 */
import { ResolvedSecrets } from '../services/control-plane/src/secrets/secret-references.ts';
import { secretForms } from '../services/control-plane/src/secrets/secret-forms.ts';
import { ms, summarize } from './support/stats.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 200);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 20);
const VALUE = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';

const answer = Array.from({ length: 8_000 }, (_, i) => ({
  id: i,
  name: `customer ${i}`,
  email: `c${i}@example.com`,
  note: 'lorem ipsum dolor sit amet '.repeat(4),
}));
const text = JSON.stringify(answer);

/** The same class, looking for only the forms redacted before encodings were. */
class PlainFormsOnly extends ResolvedSecrets {
  constructor() {
    super(new Map([['API_KEY', VALUE]]));
    const forms = [VALUE, JSON.stringify(VALUE).slice(1, -1), encodeURIComponent(VALUE)];
    const kept = [...new Set(forms)].map((form) => ({ form, name: 'API_KEY' }));
    Object.assign(this, { forms: kept, shortest: Math.min(...kept.map((k) => k.form.length)) });
  }
}

const all = new ResolvedSecrets(new Map([['API_KEY', VALUE]]));
const plain = new PlainFormsOnly();
const paths: Record<string, () => unknown> = {
  'JSON answer, all forms': () => all.redactJson(answer),
  'JSON answer, plain forms': () => plain.redactJson(answer),
  'text answer, all forms': () => all.redact(text),
  'text answer, plain forms': () => plain.redact(text),
};

console.log(`one secret: ${secretForms(VALUE).length} forms; answer: ${text.length} characters`);
const samples = Object.fromEntries(Object.keys(paths).map((name) => [name, [] as number[]]));
for (let round = 0; round < WARMUP + ROUNDS; round++) {
  for (const [name, run] of Object.entries(paths)) {
    const start = performance.now();
    run();
    if (round >= WARMUP) samples[name]!.push(performance.now() - start);
  }
}
for (const [name, values] of Object.entries(samples)) {
  const s = summarize(values);
  console.log(`  ${name.padEnd(28)} n=${s.n}  p50 ${ms(s.p50).padStart(9)}  p99 ${ms(s.p99).padStart(9)}`);
}
