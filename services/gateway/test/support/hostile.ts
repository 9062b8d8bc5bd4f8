/**
 * Hostile values for the fuzz suites: text PostgreSQL cannot store or that means something to a
 * parser (NUL, lone surrogates, `__proto__`, percent signs, long strings), numbers at the edges of
 * a double, and any JSON value leaning towards those; and the percent-encoding a careless client
 * would send for any text, lone surrogates included.
 */
import fc from 'fast-check';

export const hostileText = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '\u0000',
      'a\u0000b',
      '\ud800',
      'x\udc00',
      '__proto__',
      'constructor',
      '',
      '%',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('x'.repeat(3_000), '../..', '"', '\\', '\ud83d\ude00', '1e999') },
  { weight: 2, arbitrary: fc.string({ maxLength: 30 }) },
);
export const hostileNumber = fc.oneof(
  fc.constantFrom(0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 2),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);
export const hostileValue: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    hostileText,
    hostileNumber,
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(hostileText, tie('value'), { maxKeys: 3 }),
  ),
})).value;

const CODE_POINTS = /[\ud800-\udbff][\udc00-\udfff]|[\s\S]/g;

/** Percent-encodes text for a URL; a lone surrogate (no UTF-8) as the bytes of its CESU-8 form. */
export const percentEncoded = (text: string) =>
  text.replace(CODE_POINTS, (c) => (/^[\ud800-\udfff]$/.test(c) ? '%ED%A0%80' : encodeURIComponent(c)));
