/**
 * Whether a URI is an upstream server's resource template filled in (RFC 6570), decided in time
 * linear in the URI, whatever the template: an agent sends the URI and a tenant's upstream server
 * chooses the template, so neither may make the match slow. (The MCP SDK's matcher builds a regular
 * expression of greedy groups, which a template such as `a{+b}{+c}{+d}z` makes backtrack for
 * minutes on a long URI.)
 *
 * A template is literal text and expressions. Each expression takes the text up to the first place
 * where the literal after it occurs (the rest of the URI when none follows), without backtracking:
 * RFC 6570 templates are not reversible in general, so this is one reading of an ambiguous URI,
 * the one MCP servers' own routers give in practice. What an expression may take depends on its
 * operator: a simple `{x}` no `/`, `?` or `#` (they are reserved, hence encoded in its value), a
 * reserved `{+x}` or fragment `{#x}` anything, `{/x}` segments each starting with `/`, `{.x}` with
 * `.`, `{?x}` and `{&x}` a query part starting with `?` or `&`, `{;x}` with `;`, `{#x}` with `#`.
 * Two expressions side by side are read when the second starts with its own character
 * (`{name}{.ext}`: the name ends at the first `.`); otherwise (`{+a}{+b}`) the template is refused
 * when compiled: no reading of them is better than another.
 */

/** A template's parts, compiled once. */
export interface UriTemplateMatcher {
  readonly parts: readonly Part[];
}

type Part = { literal: string } | { operator: string; names: readonly string[]; maxLength?: number };

/** Characters of a template at most, and expressions in it (bounds of the upstream catalog). */
const MAX_TEMPLATE_CHARS = 2048;
const MAX_EXPRESSIONS = 32;
const OPERATORS = new Set(['', '+', '#', '/', '.', ';', '?', '&']);
const VARIABLE = /^[A-Za-z0-9_.%]+(\*|:[1-9][0-9]{0,3})?$/;

/**
 * The compiled template, or a reason it cannot be matched: not RFC 6570 (an unclosed brace, an
 * unknown operator or variable name), two expressions side by side, or over the bounds.
 */
export function compileUriTemplate(template: string): UriTemplateMatcher | { problem: string } {
  if (template.length === 0 || template.length > MAX_TEMPLATE_CHARS) {
    return { problem: `a template is 1 to ${MAX_TEMPLATE_CHARS} characters` };
  }
  const parts: Part[] = [];
  let at = 0;
  let expressions = 0;
  while (at < template.length) {
    const open = template.indexOf('{', at);
    const close = template.indexOf('}', at);
    if (close !== -1 && (open === -1 || close < open)) return { problem: 'a "}" closes no expression' };
    if (open === -1) {
      parts.push({ literal: template.slice(at) });
      break;
    }
    if (open > at) parts.push({ literal: template.slice(at, open) });
    const end = template.indexOf('}', open);
    if (end === -1) return { problem: 'an expression is not closed' };
    const body = template.slice(open + 1, end);
    const operator = OPERATORS.has(body.charAt(0)) && body.charAt(0) !== '' ? body.charAt(0) : '';
    const names = body.slice(operator.length).split(',');
    if (names.some((name) => !VARIABLE.test(name))) {
      return { problem: `expression {${body.slice(0, 40)}} is not an RFC 6570 expression` };
    }
    // Side by side, the second must start with its own character (`{name}{.ext}`), or the two
    // cannot be told apart in a URI.
    if (parts.length > 0 && 'operator' in parts[parts.length - 1]! && LEADS[operator] === undefined) {
      return { problem: 'two expressions side by side cannot be told apart in a URI' };
    }
    if (++expressions > MAX_EXPRESSIONS)
      return { problem: `a template has at most ${MAX_EXPRESSIONS} expressions` };
    // A single variable with a prefix length (`{id:3}`) takes at most that many characters.
    const prefix = names.length === 1 ? /:(\d+)$/.exec(names[0]!) : null;
    parts.push({
      operator,
      names: names.map((name) => name.replace(/(\*|:\d+)$/, '')),
      ...(prefix && operator === '' && { maxLength: Number(prefix[1]) }),
    });
    at = end + 1;
  }
  return { parts };
}

/** The first character an expression's value has, for the operators whose expansion starts with one. */
const LEADS: Record<string, string> = { '/': '/', '.': '.', ';': ';', '?': '?', '&': '&', '#': '#' };

/** True when `uri` is `matcher`'s template filled in (see the file's comment); linear in `uri`. */
export function matchesUriTemplate(matcher: UriTemplateMatcher, uri: string): boolean {
  const { parts } = matcher;
  let at = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if ('literal' in part) {
      if (!uri.startsWith(part.literal, at)) return false;
      at += part.literal.length;
      continue;
    }
    const next = parts[i + 1];
    let end: number;
    if (next === undefined) end = uri.length;
    else if ('literal' in next) end = uri.indexOf(next.literal, at);
    else {
      // An expression that starts with its own character follows: this one ends where that starts
      // (or at the end, the next one being empty).
      const found = uri.indexOf(LEADS[next.operator]!, at);
      end = found === -1 ? uri.length : found;
    }
    if (end === -1) return false;
    const value = uri.slice(at, end);
    if (!valueFits(part, value)) return false;
    at = end;
  }
  return at === uri.length;
}

/** Characters an expression's value may not hold after its leading one, by operator. */
const REFUSED: Record<string, RegExp> = {
  '': /[/?#]/,
  '/': /[?#]/,
  '.': /[/?#]/,
  ';': /[/?#]/,
  '?': /[/#]/,
  '&': /[/#]/,
};

function valueFits(
  part: { operator: string; names: readonly string[]; maxLength?: number },
  value: string,
): boolean {
  const { operator } = part;
  // A simple expression's value has its reserved characters encoded; it is never empty in a URI
  // that names something.
  if (operator === '') {
    return (
      value !== '' &&
      !REFUSED['']!.test(value) &&
      (part.maxLength === undefined || value.length <= part.maxLength)
    );
  }
  if (operator === '+') return true;
  if (value === '') return true;
  if (!value.startsWith(LEADS[operator]!)) return false;
  if (operator === '#') return true;
  const rest = value.slice(1);
  if (REFUSED[operator]!.test(rest)) return false;
  // A query part names its variables: `?a=1&b=2`, each one the expression lists.
  if (operator === '?' || operator === '&') {
    return rest.split('&').every((pair) => part.names.includes(pair.split('=')[0]!));
  }
  return true;
}
