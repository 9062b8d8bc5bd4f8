/**
 * A generated CRM context of about the size asked for: customers with a few fields, tags and
 * orders. Deterministic (a small linear congruential generator), so runs compare like with like.
 */
export const CITIES = ['Oslo', 'Lyon', 'Kyoto', 'Lima', 'Pune', 'Perth', 'Tartu', 'Quito'] as const;
const TIERS = ['gold', 'silver', 'bronze'] as const;

export interface Customer {
  id: number;
  name: string;
  email: string;
  tier: string;
  city: string;
  tags: string[];
  orders: { id: string; total: number }[];
  notes: string;
}

/** Customers until their JSON passes `bytes`. */
export function generateCustomers(bytes: number): Customer[] {
  let seed = 42;
  const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)] as T;
  const customers: Customer[] = [];
  let size = 0;
  for (let id = 0; size < bytes; id++) {
    const customer: Customer = {
      id,
      name: `Customer ${id}`,
      email: `customer${id}@example.com`,
      tier: pick(TIERS),
      city: pick(CITIES),
      tags: Array.from({ length: 3 }, () => `tag${Math.floor(random() * 50)}`),
      orders: Array.from({ length: 2 }, (_, k) => ({
        id: `o${id}-${k}`,
        total: Math.round(random() * 10_000) / 100,
      })),
      notes: 'Prefers email. Renewal in spring; ask about the annual plan before the quarter ends.',
    };
    size += JSON.stringify(customer).length + 1;
    customers.push(customer);
  }
  return customers;
}
