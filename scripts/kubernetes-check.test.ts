/**
 * The Kubernetes check must fail on a broken manifest, or it proves nothing: these tests feed it
 * small kustomizations, good and broken (a wrong type, an unknown field, a missing required field,
 * a dangling reference, an overlay the render cannot reproduce), and check the repository's own
 * manifests pass. Run by `pnpm lint:kubernetes`, after the check itself.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkTree, main } from './kubernetes-check.ts';
import { build } from './kustomize-render.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const made: string[] = [];

afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A folder holding `files` (path: text). */
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'kubernetes-check-'));
  made.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

const KUSTOMIZATION = 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n';

/** A Deployment with a container, a Service and a budget; `edit` changes the Deployment first. */
function app(edit: (deployment: string) => string = (d) => d): string {
  const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: { app: web }
spec:
  replicas: 2
  selector:
    matchLabels: { app: web }
  template:
    metadata:
      labels: { app: web }
    spec:
      containers:
        - name: web
          image: example/web
          ports:
            - { name: http, containerPort: 8080 }
          env:
            - name: TOKEN
              valueFrom:
                secretKeyRef: { name: web, key: TOKEN }
          readinessProbe:
            httpGet: { path: /readyz, port: http }
          resources:
            requests: { cpu: 100m, memory: 64Mi }
`;
  return `${edit(deployment)}---
apiVersion: v1
kind: Service
metadata:
  name: web
  labels: { app: web }
spec:
  selector: { app: web }
  ports:
    - { name: http, port: 80, targetPort: http }
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels: { app: web }
`;
}

/** A base with `app()` and an overlay over it with a Secret and `overlay` added to its kustomization. */
function project(options: { app?: string; overlay?: string; files?: Record<string, string> } = {}) {
  return tree({
    'base/kustomization.yaml': `${KUSTOMIZATION}resources:\n  - app.yaml\n`,
    'base/app.yaml': options.app ?? app(),
    'overlays/prod/kustomization.yaml':
      `${KUSTOMIZATION}namespace: prod\nresources:\n  - ../../base\n` +
      'secretGenerator:\n  - name: web\n    envs: [secrets.env]\n    options: { disableNameSuffixHash: true }\n' +
      (options.overlay ?? ''),
    'overlays/prod/secrets.env.example': '# keys only\nTOKEN=\n',
    ...options.files,
  });
}

async function problems(dir: string): Promise<string[]> {
  return (await checkTree(dir, dir)).flatMap((report) => report.problems.map((p) => `${report.name}: ${p}`));
}

describe('the Kubernetes check', () => {
  it('passes the repository’s manifests, each overlay alone and with each component', async () => {
    const reports = await checkTree(join(root, 'deploy/kubernetes'), root);
    expect(reports.flatMap((r) => r.problems)).toEqual([]);
    expect(reports.map((r) => r.name)).toEqual([
      'deploy/kubernetes/base',
      'deploy/kubernetes/overlays/example',
      'deploy/kubernetes/overlays/example + deploy/kubernetes/components/servicemonitor',
    ]);
    expect(reports.every((r) => r.objects > 0)).toBe(true);
  });

  it('passes a good base and overlay', async () => {
    expect(await problems(project())).toEqual([]);
  });

  it('fails a field of the wrong type', async () => {
    const found = await problems(project({ app: app((d) => d.replace('replicas: 2', 'replicas: two')) }));
    expect(found).toContainEqual(expect.stringContaining('Deployment web: /spec/replicas: must be integer'));
  });

  it('fails a field the schema does not have, at any depth', async () => {
    const found = await problems(
      project({
        app: app((d) =>
          d.replace('image: example/web', 'image: example/web\n          imagePullPolice: Always'),
        ),
      }),
    );
    expect(found).toContainEqual(
      expect.stringContaining(
        '/spec/template/spec/containers/0/imagePullPolice: unknown field "imagePullPolice"',
      ),
    );
    const top = await problems(
      project({ app: app((d) => d.replace('spec:\n  replicas', 'spek: {}\nspec:\n  replicas')) }),
    );
    expect(top).toContainEqual(expect.stringContaining('/spek: unknown field'));
  });

  it('lets maps keep any key (labels, annotations, data)', async () => {
    const found = await problems(
      project({
        app: app((d) =>
          d.replace(
            'labels: { app: web }\nspec',
            'labels: { app: web, any.example.com/key: x }\n  annotations: { whatever: y }\nspec',
          ),
        ),
      }),
    );
    expect(found).toEqual([]);
  });

  it('fails a missing required field', async () => {
    const found = await problems(
      project({ app: app((d) => d.replace(/ {6}containers:[\s\S]*$/, '      restartPolicy: Always\n')) }),
    );
    expect(found).toContainEqual(
      expect.stringContaining('Deployment web: /spec/template/spec: must have required property containers'),
    );
  });

  it('fails a kind no bundled schema has, and a YAML syntax error', async () => {
    const unknownKind = await problems(
      project({ app: app((d) => d.replace('kind: Deployment', 'kind: Deploymnet')) }),
    );
    expect(unknownKind).toContainEqual(expect.stringContaining('no bundled schema for apps/v1 Deploymnet'));
    const syntax = await problems(project({ app: 'kind: [unclosed\n' }));
    expect(syntax).toContainEqual(expect.stringContaining('base/app.yaml'));
  });

  it('fails what the API server checks beyond the schema: selector, names, probe ports', async () => {
    const found = await problems(
      project({
        app: app((d) =>
          d
            .replace('matchLabels: { app: web }', 'matchLabels: { app: other }')
            .replace('name: web\n  labels', 'name: Web_1\n  labels')
            .replace('port: http }', 'port: metrics }'),
        ),
      }),
    );
    expect(found).toContainEqual(
      expect.stringContaining('/spec/selector: matchLabels must be non-empty and match'),
    );
    expect(found).toContainEqual(expect.stringContaining('"Web_1" is not a valid Deployment name'));
    expect(found).toContainEqual(expect.stringContaining('readinessProbe uses port "metrics"'));
  });

  it('fails an overlay whose references do not resolve', async () => {
    const dir = project({
      app: app((d) => d.replace('key: TOKEN', 'key: TOKEN_TYPO')),
      files: { 'overlays/prod/secrets.env.example': 'TOKEN=\n' },
    });
    const found = await problems(dir);
    expect(found).toContainEqual(expect.stringContaining('env TOKEN: Secret web has no key TOKEN_TYPO'));
    // The base alone is not complete (its Secret comes from the overlay): only the overlay says so.
    expect(found.every((p) => p.startsWith('overlays/prod'))).toBe(true);
  });

  it('fails a Service or a budget that selects no pod, and a Service port its pods do not name', async () => {
    const found = await problems(
      project({
        app: app()
          .replace('selector: { app: web }', 'selector: { app: gone }')
          .replace(
            'minAvailable: 1\n  selector:\n    matchLabels: { app: web }',
            'minAvailable: 1\n  selector:\n    matchLabels: { app: gone }',
          ),
      }),
    );
    expect(found).toContainEqual(
      expect.stringContaining('Service web: its selector matches no pod template'),
    );
    expect(found).toContainEqual(
      expect.stringContaining('PodDisruptionBudget web: its selector matches no pod template'),
    );
    const port = await problems(project({ app: app().replace('targetPort: http', 'targetPort: https') }));
    expect(port).toContainEqual(
      expect.stringContaining('Service web: targetPort "https" is no port name of its pods'),
    );
  });

  it('checks a ServiceMonitor against the Prometheus Operator’s schema, and its Secret', async () => {
    const monitor = (endpoint: string) =>
      project({
        files: {
          'components/monitor/kustomization.yaml':
            'apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n  - monitor.yaml\n',
          'components/monitor/monitor.yaml': `apiVersion: monitoring.coreos.com/v1
kind: ServiceMonitor
metadata:
  name: web
spec:
  selector:
    matchLabels: { app: web }
  endpoints:
    - port: http
${endpoint}`,
        },
      });
    const good = '      authorization:\n        credentials: { name: web, key: TOKEN }\n';
    expect(await problems(monitor(good))).toEqual([]);
    const unknown = await problems(monitor(`${good}      scrapeEvery: 30s\n`));
    expect(unknown).toContainEqual(expect.stringContaining('/spec/endpoints/0/scrapeEvery: unknown field'));
    const wrongType = await problems(monitor('      honorLabels: "yes"\n'));
    expect(wrongType).toContainEqual(
      expect.stringContaining('/spec/endpoints/0/honorLabels: must be boolean'),
    );
    const missingKey = await problems(
      monitor('      authorization:\n        credentials: { name: web, key: NOPE }\n'),
    );
    expect(missingKey).toContainEqual(expect.stringContaining('Secret web has no key NOPE'));
  });

  it('renders namespace, images, replicas and both kinds of patches as kustomize does', () => {
    const dir = project({
      overlay: `images:
  - { name: example/web, newName: registry.example.com/web, newTag: "1.2" }
replicas:
  - { name: web, count: 3 }
patches:
  - path: labels.yaml
  - target: { kind: Deployment, name: web }
    patch: |-
      - { op: replace, path: /spec/template/spec/containers/0/resources/requests/memory, value: 128Mi }
      - { op: add, path: /spec/template/spec/containers/0/env/-, value: { name: MODE, value: prod } }
`,
      files: {
        'overlays/prod/labels.yaml':
          'apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  labels: { tier: front, app: null }\n',
      },
    });
    const objects = build(join(dir, 'overlays/prod'), { root: dir, exampleSecrets: true });
    /** The parts of the built objects read below. */
    interface Built {
      metadata: { labels?: object };
      spec: {
        replicas: number;
        template: {
          spec: { containers: { image: string; resources: { requests: object }; env: { name: string }[] }[] };
        };
      };
    }
    const byKind = Object.fromEntries(
      objects.map((m) => [m.object.kind as string, m.object as unknown as Built]),
    );
    expect(Object.keys(byKind).sort()).toEqual(['Deployment', 'PodDisruptionBudget', 'Secret', 'Service']);
    expect(objects.every((m) => (m.object.metadata as { namespace?: string }).namespace === 'prod')).toBe(
      true,
    );
    const container = byKind.Deployment?.spec.template.spec.containers[0];
    expect(container?.image).toBe('registry.example.com/web:1.2');
    expect(container?.resources.requests).toEqual({ cpu: '100m', memory: '128Mi' });
    expect(container?.env.map((e) => e.name)).toEqual(['TOKEN', 'MODE']);
    expect(byKind.Deployment?.spec.replicas).toBe(3);
    expect(byKind.Service?.metadata.labels).toEqual({ tier: 'front' });
    expect(byKind.Secret).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'web', namespace: 'prod' },
      type: 'Opaque',
      data: { TOKEN: '' },
    });
  });

  it('fails an overlay that a patch breaks, or whose patch finds nothing', async () => {
    const breaking = await problems(
      project({
        overlay:
          'patches:\n  - target: { kind: Deployment, name: web }\n    patch: |-\n      - { op: replace, path: /spec/replicas, value: "3" }\n',
      }),
    );
    expect(breaking).toContainEqual(
      expect.stringContaining(
        'overlays/prod: base/app.yaml: Deployment web: /spec/replicas: must be integer',
      ),
    );
    const nothing = await problems(
      project({ overlay: 'patches:\n  - target: { kind: Deployment, name: api }\n    patch: "[]"\n' }),
    );
    expect(nothing).toContainEqual(expect.stringContaining('no object matches'));
  });

  it('refuses what its render does not reproduce rather than render it differently', async () => {
    expect(await problems(project({ overlay: 'namePrefix: prod-\n' }))).toContainEqual(
      expect.stringContaining('namePrefix not rendered by this check'),
    );
    const listPatch = await problems(
      project({
        overlay: 'patches:\n  - path: list.yaml\n',
        files: {
          'overlays/prod/list.yaml':
            'apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: web }\nspec:\n  template:\n    spec:\n      containers: []\n',
        },
      }),
    );
    expect(listPatch).toContainEqual(expect.stringContaining('which kustomize merges by key'));
    const hashed = await problems(
      tree({
        'kustomization.yaml': `${KUSTOMIZATION}secretGenerator:\n  - name: web\n    literals: [A=b]\n`,
      }),
    );
    expect(hashed).toContainEqual(expect.stringContaining('needs options.disableNameSuffixHash: true'));
  });

  it('exits 1 and names the problem when run as the lint step', async () => {
    const dir = project({ app: app((d) => d.replace('replicas: 2', 'replicas: two')) });
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((line: string) => void lines.push(line));
    try {
      expect(await main(dir)).toBe(1);
    } finally {
      log.mockRestore();
    }
    expect(lines.join('\n')).toContain('/spec/replicas: must be integer');
    expect(lines.at(-1)).toMatch(/builds have problems$/);
  });
});
