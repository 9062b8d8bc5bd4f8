/**
 * What the domain reads and writes through: a Prisma client or an open transaction, so services
 * compose inside one transaction. Its own file, below everything that touches the database.
 */
import type { PrismaClient } from '../generated/prisma/client.ts';
import type { TransactionClient } from '../generated/prisma/internal/prismaNamespace.ts';

export type Db = PrismaClient | TransactionClient;
