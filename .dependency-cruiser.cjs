// The architecture check of `pnpm lint` (DESIGN.md section 2): which part of the house may import
// which. Violations that are known and being taken apart stand in .dependency-cruiser-known.json
// (`pnpm lint:architecture:baseline` writes it again); any other violation fails the lint.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment:
        'No import loops. The JMESPath interpreter and its function table call each other by design ' +
        '(a function such as sort_by evaluates an expression), so that pair may stay.',
      from: { pathNot: '^packages/context-ops/src/jmespath/(interpreter|functions)\\.ts$' },
      to: { circular: true },
    },
    {
      name: 'services-apart',
      severity: 'error',
      comment: 'The services talk over HTTP only: none imports another.',
      from: { path: '^services/([^/]+)/' },
      to: { path: '^services/([^/]+)/', pathNot: '^services/$1/' },
    },
    {
      name: 'packages-below-services',
      severity: 'error',
      comment: 'Packages are shared by the services; they never import a service.',
      from: { path: '^packages/' },
      to: { path: '^services/' },
    },
    {
      name: 'test-support-for-tests-only',
      severity: 'error',
      comment:
        'The stacks tests run against are started by packages/test-support (docs/decisions/' +
        '062-one-test-support-package.md); tests and bench/ import it, no service or package source does.',
      from: { path: '^(services|packages)/[^/]+/src/', pathNot: '^packages/test-support/' },
      to: { path: '^packages/test-support/' },
    },
    {
      name: 'gateway-without-database',
      severity: 'error',
      comment: 'The gateway holds no database: the control plane is the only owner of PostgreSQL.',
      from: { path: '^services/gateway/src/' },
      to: { path: 'node_modules/(@prisma|prisma|pg|@electric-sql|pglite-prisma-adapter)/' },
    },
    {
      name: 'domain-without-fastify',
      severity: 'error',
      comment:
        'HTTP is the routes’ business: the domain, the execution layer and the kinds never import Fastify.',
      from: {
        path: '^services/control-plane/src/(domain|execution|kinds|context|outbound|exposure|audit|secrets|accounts|legacy|transfer)/',
      },
      to: { path: 'node_modules/(fastify|@fastify)/' },
    },
    {
      name: 'control-plane-layers',
      severity: 'error',
      comment:
        'The control plane is layered (docs/decisions/007-control-plane-layers.md), one direction: ' +
        'domain (kernel) <- context, secrets, audit, accounts, outbound <- kinds <- execution, legacy <- exposure ' +
        '<- transfer, demo <- routes <- app. A folder never imports one of a layer above its own.',
      from: { path: '^services/control-plane/src/domain/' },
      to: {
        path: '^services/control-plane/src/',
        pathNot: '^services/control-plane/src/(domain|generated)/',
      },
    },
    {
      name: 'control-plane-layers-data',
      severity: 'error',
      comment:
        'Contexts, secrets, audit, accounts and the guarded way out (outbound) sit below every tool ' +
        'kind and what runs them.',
      from: { path: '^services/control-plane/src/(context|secrets|audit|accounts|outbound)/' },
      to: {
        path: '^services/control-plane/src/(kinds|execution|legacy|exposure|transfer|routes|http)/|^services/control-plane/src/(app|server|demo)\\.ts$',
      },
    },
    {
      name: 'kinds-below-execution',
      severity: 'error',
      comment:
        'A kind imports the kind interface (kinds/kind.ts) and the layers below, never the executor ' +
        'or anything that uses it.',
      from: { path: '^services/control-plane/src/kinds/' },
      to: {
        path: '^services/control-plane/src/(execution|legacy|exposure|transfer|routes|http)/|^services/control-plane/src/(app|server|demo)\\.ts$',
      },
    },
    {
      name: 'kinds-below-registry',
      severity: 'error',
      comment:
        'A kind folder imports the kind interface (kinds/kind.ts), the shared helpers beside it that ' +
        'import no kind, and the layers below; never the registry, ADIs or another file above the kinds ' +
        '(each of those imports every kind, so the arrow would run back up).',
      from: { path: '^services/control-plane/src/kinds/[^/]+/' },
      to: {
        path: '^services/control-plane/src/kinds/[^/]+\\.ts$',
        pathNot:
          '^services/control-plane/src/kinds/(kind|arguments|tool-naming|idempotency|binding-overrides)\\.ts$',
      },
    },
    {
      name: 'kind-interface-below-kind-folders',
      severity: 'error',
      comment:
        'The kind interface (kinds/kind.ts) is what every kind folder imports, so it imports none of ' +
        'them, not even a type: a service only one kind uses (the query pool, the sandbox, the ' +
        'upstream servers) is declared in that kind’s folder and gathered by the registry.',
      from: { path: '^services/control-plane/src/kinds/kind\\.ts$' },
      to: { path: '^services/control-plane/src/kinds/[^/]+/' },
    },
    {
      name: 'kinds-shared-helpers-below-kinds',
      severity: 'error',
      comment:
        'The helpers every kind may import (argument checks, tool names, idempotent writes, binding ' +
        'overrides) import no kind and nothing above them: a kind module is handed to them, not looked up.',
      from: {
        path: '^services/control-plane/src/kinds/(arguments|tool-naming|idempotency|binding-overrides)\\.ts$',
      },
      to: {
        path: '^services/control-plane/src/kinds/',
        pathNot:
          '^services/control-plane/src/kinds/(kind|arguments|tool-naming|idempotency|binding-overrides)\\.ts$',
      },
    },
    {
      name: 'execution-below-exposure',
      severity: 'error',
      comment: 'The executor runs tools; exposures and the legacy instances are above it.',
      from: { path: '^services/control-plane/src/(execution|legacy)/' },
      to: {
        path: '^services/control-plane/src/(exposure|transfer|routes|http)/|^services/control-plane/src/(app|server|demo)\\.ts$',
      },
    },
    {
      name: 'control-plane-ground',
      severity: 'error',
      comment:
        'The ground floor (configuration, metrics, opening the database, the thread pool) imports no layer.',
      from: { path: '^services/control-plane/src/(db/|workers/|config\\.ts$|metrics\\.ts$)' },
      to: {
        path: '^services/control-plane/src/',
        pathNot:
          '^services/control-plane/src/(db|workers|generated)/|^services/control-plane/src/(config|metrics)\\.ts$',
      },
    },
    {
      name: 'control-plane-layers-top',
      severity: 'error',
      comment: 'Exposures sit below export/import, the demo and the routes; those sit below the routes.',
      from: { path: '^services/control-plane/src/(exposure/|transfer/|demo\\.ts$)' },
      to: {
        path: '^services/control-plane/src/(routes|http)/|^services/control-plane/src/(app|server)\\.ts$',
      },
    },
    {
      name: 'control-plane-exposure-below-transfer',
      severity: 'error',
      from: { path: '^services/control-plane/src/exposure/' },
      to: { path: '^services/control-plane/src/transfer/|^services/control-plane/src/demo\\.ts$' },
    },
    {
      name: 'gateway-layers',
      severity: 'error',
      comment:
        'The gateway by role, one direction: http (guards, errors) <- control-plane (client, batcher, ' +
        'breaker, config cache) <- auth (admission) <- mcp (one module per capability) <- fast <- routes <- app.',
      from: { path: '^services/gateway/src/http/' },
      to: {
        path: '^services/gateway/src/(control-plane|auth|mcp|fast|routes)/|^services/gateway/src/app\\.ts$',
      },
    },
    {
      name: 'gateway-layers-control-plane',
      severity: 'error',
      from: { path: '^services/gateway/src/control-plane/' },
      to: { path: '^services/gateway/src/(auth|mcp|fast|routes)/|^services/gateway/src/app\\.ts$' },
    },
    {
      name: 'gateway-layers-auth',
      severity: 'error',
      from: { path: '^services/gateway/src/auth/' },
      to: { path: '^services/gateway/src/mcp/' },
    },
    {
      name: 'gateway-layers-fast',
      severity: 'error',
      from: { path: '^services/gateway/src/fast/' },
      to: { path: '^services/gateway/src/routes/|^services/gateway/src/app\\.ts$' },
    },
    {
      name: 'gateway-layers-mcp',
      severity: 'error',
      from: { path: '^services/gateway/src/(auth|mcp)/' },
      to: { path: '^services/gateway/src/(fast|routes)/|^services/gateway/src/app\\.ts$' },
    },
    {
      name: 'console-browser-safe',
      severity: 'error',
      comment: 'The console runs in a browser: no Node.js built-ins, no server-side part of a package.',
      from: { path: '^services/console/src/' },
      to: {
        pathNot: '^services/console/',
        path: ['^packages/service-kit/', '^services/'],
      },
    },
    {
      name: 'console-no-node-builtins',
      severity: 'error',
      from: { path: '^services/console/src/' },
      to: { dependencyTypes: ['core'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|generated)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['bindery-source', 'import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'],
    },
    combinedDependencies: true,
  },
};
