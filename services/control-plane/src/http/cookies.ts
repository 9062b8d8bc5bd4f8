/** A cookie's value in a request's `Cookie` header, or undefined (no parsing library for one name). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  return (header ?? '')
    .split(';')
    .map((part) => part.trim())
    .find((part) => part.startsWith(`${name}=`))
    ?.slice(name.length + 1);
}
