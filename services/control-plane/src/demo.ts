/**
 * The demo a fresh install starts with (DESIGN.md §9), so an MCP client can connect at once: a
 * "Demo" project, a small CRM table, a handful of tools on it (context operations and one custom
 * JavaScript tool) and the "Demo agent" exposure binding them all, owned by the root user. Built through the same domain services as the admin API.
 */
import {
  MCP_SERVER_PATH,
  type CreateAdiBody,
  type CreateContextAdiBody,
  type GatewayList,
} from '@bindery/contracts';
import { DomainError } from './domain/errors.ts';
import { createAdi } from './kinds/adis.ts';
import { createAei } from './exposure/aeis.ts';
import { createBindings } from './exposure/bindings.ts';
import type { Db, DomainContext, Principal } from './domain/context.ts';
import { createProject } from './context/projects.ts';
import { createTable } from './context/tables.ts';

export const DEMO_PROJECT = 'Demo';
export const DEMO_TABLE = 'crm';
export const DEMO_AEI = 'Demo agent';

const CUSTOMERS = [
  { id: 'c-001', name: 'Ada Lovelace', email: 'ada@analytical.example', tier: 'gold', city: 'London' },
  { id: 'c-002', name: 'Grace Hopper', email: 'grace@cobol.example', tier: 'platinum', city: 'New York' },
  { id: 'c-003', name: 'Alan Turing', email: 'alan@bletchley.example', tier: 'silver', city: 'Manchester' },
  { id: 'c-004', name: 'Katherine Johnson', email: 'katherine@orbit.example', tier: 'gold', city: 'Hampton' },
  { id: 'c-005', name: 'Linus Torvalds', email: 'linus@kernel.example', tier: 'bronze', city: 'Portland' },
  {
    id: 'c-006',
    name: 'Margaret Hamilton',
    email: 'margaret@apollo.example',
    tier: 'platinum',
    city: 'Boston',
  },
  { id: 'c-007', name: 'Tim Berners-Lee', email: 'tim@web.example', tier: 'silver', city: 'Geneva' },
  { id: 'c-008', name: 'Hedy Lamarr', email: 'hedy@spread.example', tier: 'bronze', city: 'Vienna' },
];

const ORDERS = [
  {
    id: 'o-1001',
    customer_id: 'c-001',
    total: 1250.0,
    currency: 'EUR',
    status: 'paid',
    placed_at: '2025-09-02',
  },
  {
    id: 'o-1002',
    customer_id: 'c-002',
    total: 89.9,
    currency: 'USD',
    status: 'shipped',
    placed_at: '2025-09-05',
  },
  {
    id: 'o-1003',
    customer_id: 'c-002',
    total: 420.5,
    currency: 'USD',
    status: 'paid',
    placed_at: '2025-09-11',
  },
  {
    id: 'o-1004',
    customer_id: 'c-004',
    total: 15.0,
    currency: 'USD',
    status: 'refunded',
    placed_at: '2025-09-12',
  },
  {
    id: 'o-1005',
    customer_id: 'c-006',
    total: 2999.0,
    currency: 'USD',
    status: 'pending',
    placed_at: '2025-09-20',
  },
  {
    id: 'o-1006',
    customer_id: 'c-007',
    total: 64.0,
    currency: 'CHF',
    status: 'shipped',
    placed_at: '2025-10-01',
  },
  {
    id: 'o-1007',
    customer_id: 'c-003',
    total: 310.75,
    currency: 'GBP',
    status: 'paid',
    placed_at: '2025-10-03',
  },
  {
    id: 'o-1008',
    customer_id: 'c-008',
    total: 45.2,
    currency: 'EUR',
    status: 'pending',
    placed_at: '2025-10-09',
  },
];

/** Customers written by the demo's write tools must keep the fields the read tools rely on. */
const CUSTOMER_SCHEMA = {
  type: 'object',
  required: ['id', 'name', 'email'],
  properties: {
    id: { type: 'string', minLength: 1 },
    name: { type: 'string', minLength: 1 },
    email: { type: 'string', minLength: 3 },
    tier: { enum: ['bronze', 'silver', 'gold', 'platinum'] },
    city: { type: 'string' },
  },
};

type DemoTool = Omit<CreateContextAdiBody, 'table_id'> & { name: string };

/** The demo's context tools, one per spec; readable names, since an agent sees them as they are. */
const TOOLS: DemoTool[] = [
  {
    name: 'query_crm',
    operation_type: 'query',
    json_path: '',
    category: 'crm',
    description:
      'Runs a JMESPath query over the CRM data ({customers: [...], orders: [...]}), e.g. ' +
      '"customers[?tier==\'gold\'].name" or "orders[?status==\'pending\'] | length(@)".',
  },
  {
    name: 'get_crm_schema',
    operation_type: 'get_schema',
    json_path: '',
    category: 'crm',
    description: 'Returns the JSON Schema of the CRM data: call it first to learn the fields.',
  },
  {
    name: 'preview_customers',
    operation_type: 'preview',
    json_path: '/customers',
    category: 'customers',
    description:
      'Lists customers page by page (id, name, tier, city); use select_customers for whole records.',
    config: { preview_keys: ['id', 'name', 'tier', 'city'] },
  },
  {
    name: 'select_customers',
    operation_type: 'select',
    json_path: '/customers',
    category: 'customers',
    description: 'Returns whole customer records by id (e.g. ["c-001", "c-004"]).',
    config: { id_field: 'id' },
  },
  {
    name: 'create_customer',
    operation_type: 'create',
    json_path: '/customers',
    category: 'customers',
    description:
      'Appends a customer: value {id, name, email, tier?, city?} (tier: bronze|silver|gold|platinum).',
    config: { item_schema: CUSTOMER_SCHEMA },
  },
  {
    name: 'update_customer',
    operation_type: 'update',
    json_path: '/customers',
    category: 'customers',
    description:
      'Changes a customer by array index: path "/2" with merge: true and value {"tier": "gold"} ' +
      'changes only the tier (find the index with query_crm, e.g. "customers[*].id").',
    config: { item_schema: CUSTOMER_SCHEMA },
  },
  {
    name: 'preview_orders',
    operation_type: 'preview',
    json_path: '/orders',
    category: 'orders',
    description: 'Lists orders page by page (id, customer_id, total, status).',
    config: { preview_keys: ['id', 'customer_id', 'total', 'status'] },
  },
];

/** Totals by currency: what a custom tool adds to the prebuilt operations (arithmetic, grouping). */
const ORDER_TOTALS_CODE = `// Totals of the CRM's orders by currency, optionally of one status only.
export default async function (args, ctx) {
  const orders = await ctx.context.read('');
  const totals = {};
  let count = 0;
  for (const order of orders) {
    if (args.status !== undefined && order.status !== args.status) continue;
    const sum = (totals[order.currency] ?? 0) + order.total;
    totals[order.currency] = Math.round(sum * 100) / 100;
    count += 1;
  }
  return { orders: count, totals };
}
`;

/** The demo's custom tool: JavaScript reading the orders (read-only), on the same table. */
function orderTotals(tableId: string): CreateAdiBody {
  return {
    kind: 'custom',
    name: 'order_totals',
    category: 'orders',
    description:
      'Sums order totals per currency (amounts in different currencies are never added together); ' +
      'status filters to one status, e.g. "paid".',
    code: ORDER_TOTALS_CODE,
    input_schema: {
      type: 'object',
      properties: { status: { enum: ['pending', 'paid', 'shipped', 'refunded'] } },
      additionalProperties: false,
    },
    output_schema: {
      type: 'object',
      required: ['orders', 'totals'],
      properties: {
        orders: { type: 'integer', description: 'orders counted' },
        totals: { type: 'object', additionalProperties: { type: 'number' }, description: 'currency: sum' },
      },
    },
    context: { table_id: tableId, json_path: '/orders', write: false },
  };
}

export interface DemoSeed {
  aeiId: string;
  /** The demo exposure's api_key: to be shown once, never logged. */
  apiKey: string;
  toolNames: string[];
}

/**
 * Whether a start should seed the demo (on an empty database): BINDERY_SEED_DEMO decides when set,
 * else only the embedded database does, the try-it-out setup (a shared PostgreSQL stays clean).
 */
export function wantsDemo(setting: boolean | undefined, database: 'pglite' | 'postgres'): boolean {
  return setting ?? database === 'pglite';
}

/** True when no user has any project, table, exposure or legacy instance yet. */
export async function holdsNoUserData(db: Db): Promise<boolean> {
  const found = await Promise.all([
    db.project.findFirst({ select: { id: true } }),
    db.table.findFirst({ select: { id: true } }),
    db.aei.findFirst({ select: { id: true } }),
    db.mcpInstance.findFirst({ select: { id: true } }),
  ]);
  return found.every((row) => row === null);
}

/**
 * Seeds the demo for the root user when the database holds no user data; answers what it created,
 * or undefined when it left the database alone. Run it after the root user exists. Two control
 * planes starting at once on one empty database seed it once: the second one's "Demo" project
 * clashes on its slug and it backs off.
 */
export async function seedDemo(ctx: DomainContext): Promise<DemoSeed | undefined> {
  const db = ctx.prisma;
  if (!(await holdsNoUserData(db))) return undefined;
  const root = await db.user.findFirst({ where: { isRoot: true }, orderBy: { id: 'asc' } });
  if (!root) throw new DomainError('INTERNAL', 'the demo needs the root user; create it first');
  const owner: Principal = { userId: root.id, isRoot: true };

  let projectId: string;
  try {
    projectId = (
      await createProject(db, owner, {
        name: DEMO_PROJECT,
        description: 'Seeded on first start: a small CRM exposed to agents. Delete it when you like.',
      })
    ).id;
  } catch (error) {
    if (error instanceof DomainError && error.code === 'CONFLICT') return undefined;
    throw error;
  }
  const table = await createTable(db, owner, {
    name: DEMO_TABLE,
    project_id: projectId,
    data: { customers: CUSTOMERS, orders: ORDERS },
  });
  const adiIds: string[] = [];
  for (const tool of TOOLS) adiIds.push((await createAdi(db, owner, { ...tool, table_id: table.id })).id);
  adiIds.push((await createAdi(db, owner, orderTotals(table.id), ctx.sandbox)).id);
  const aei = await createAei(db, owner, { name: DEMO_AEI });
  const bindings = await createBindings(
    ctx,
    owner,
    aei.id,
    adiIds.map((id) => ({ adi_id: id })),
  );
  return { aeiId: aei.id, apiKey: aei.api_key, toolNames: bindings.map((b) => b.tool_name) };
}

/** The root user's demo exposure seeded on an earlier start, if it is still there (for the start banner). */
export async function existingDemo(db: Db): Promise<{ aeiId: string; tools: number } | undefined> {
  const aei = await db.aei.findFirst({
    where: { name: DEMO_AEI, user: { isRoot: true } },
    orderBy: { createdAt: 'asc' },
    select: { id: true, _count: { select: { bindings: true } } },
  });
  return aei ? { aeiId: aei.id, tools: aei._count.bindings } : undefined;
}

/**
 * The demo exposure seeded on the first start (BINDERY_SEED_DEMO), when the caller is
 * the root user owning it: its name, id and the public gateway's MCP endpoint (the api_key goes in
 * a Bearer header; it was shown once, at the seed).
 */
export async function demoOf(
  db: Db,
  caller: Principal,
  gatewayPublicUrl: string,
): Promise<GatewayList['demo']> {
  if (!caller.isRoot) return null;
  const aei = await db.aei.findFirst({
    where: { name: DEMO_AEI, userId: caller.userId, user: { isRoot: true } },
    orderBy: { createdAt: 'asc' },
    select: { id: true, name: true },
  });
  return aei ? { aei_id: aei.id, name: aei.name, mcp_url: `${gatewayPublicUrl}${MCP_SERVER_PATH}` } : null;
}
