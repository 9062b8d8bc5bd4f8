// Config for Prisma 6.19's WebAssembly schema engine, used only to render schema.prisma as SQL
// (the native engine that Prisma 7's migrate needs cannot be installed everywhere we build).
import { defineConfig } from 'prisma/config';
import { PrismaPg } from '@prisma/adapter-pg';

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  adapter: async () =>
    new PrismaPg({
      connectionString:
        process.env.DATABASE_URL ??
        process.env.TEST_DATABASE_URL ??
        'postgresql://postgres@127.0.0.1:5432/postgres',
    }),
});
