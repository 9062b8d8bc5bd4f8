/**
 * Builds a kustomization the way `kubectl apply -k` would, for the few kustomize features the
 * manifests under deploy/kubernetes use, so `pnpm lint:kubernetes` checks the objects a cluster
 * would receive and not only the files as written. No maintained kustomize runs from npm alone (it
 * is a Go program), and the check must run where only the npm packages are, so this is a small
 * render of its own: resources and components, a secretGenerator without name hashes, strategic
 * merge patches of maps, JSON 6902 patches, the namespace, replicas and image transformers. Any
 * other field, or a feature this render does not reproduce exactly (a list in a strategic merge
 * patch, a name hash), is refused with a message rather than rendered differently from kustomize.
 * docs/decisions/076-kubernetes-manifests.md says why and what it leaves out.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export type KObject = { [key: string]: unknown };

/** One object of a build, and the file it came from (for messages). */
export interface Manifest {
  source: string;
  object: KObject;
}

export interface RenderOptions {
  /** Paths in messages are relative to this folder (the repository). */
  root: string;
  /**
   * A secretGenerator env file that is missing is read from `<file>.example` instead: real secret
   * files stay out of git, and their examples give the Secret the same keys.
   */
  exampleSecrets?: boolean;
  /** Notes about such substitutions, for the caller to print. */
  notes?: string[];
}

export class RenderError extends Error {}

const KUSTOMIZATION_FILES = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'];
const KINDS: Record<string, string> = {
  Kustomization: 'kustomize.config.k8s.io/v1beta1',
  Component: 'kustomize.config.k8s.io/v1alpha1',
};
/** Every field this render reproduces; any other is refused. */
const SUPPORTED_FIELDS = new Set([
  'apiVersion',
  'kind',
  'resources',
  'components',
  'namespace',
  'secretGenerator',
  'patches',
  'replicas',
  'images',
]);
/** Kinds without a namespace among those the check knows (kustomize leaves them be). */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PriorityClass',
  'StorageClass',
  'PersistentVolume',
  'IngressClass',
]);
const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'ReplicaSet', 'ReplicationController']);

export function isObject(value: unknown): value is KObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The kustomization file in `dir`, or undefined. */
export function kustomizationFile(dir: string): string | undefined {
  return KUSTOMIZATION_FILES.map((name) => join(dir, name)).find((file) => existsSync(file));
}

/** The YAML documents of a file (empty ones dropped); a syntax error fails. */
export function readYaml(file: string, root: string): unknown[] {
  const where = relative(root, file);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new RenderError(`${where}: cannot be read`);
  }
  return parseYaml(text, where);
}

function parseYaml(text: string, where: string): unknown[] {
  const out: unknown[] = [];
  for (const document of parseAllDocuments(text, { uniqueKeys: true })) {
    const error = document.errors[0];
    if (error) throw new RenderError(`${where}: ${error.message.split('\n')[0]}`);
    const value: unknown = document.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

/** Reads the kustomization (or component) in `dir`, refusing the fields this render does not reproduce. */
export function readKustomization(dir: string, root: string): KObject {
  const file = kustomizationFile(dir);
  if (!file) throw new RenderError(`${relative(root, dir)}: no kustomization.yaml`);
  const where = relative(root, file);
  const [k, ...more] = readYaml(file, root);
  if (!isObject(k) || more.length > 0) throw new RenderError(`${where}: must be one YAML mapping`);
  const kind = typeof k.kind === 'string' ? k.kind : 'Kustomization';
  if (!(kind in KINDS) || (k.apiVersion !== undefined && k.apiVersion !== KINDS[kind]))
    throw new RenderError(
      `${where}: must be ${KINDS.Kustomization} Kustomization or ${KINDS.Component} Component`,
    );
  const unsupported = Object.keys(k).filter((field) => !SUPPORTED_FIELDS.has(field));
  if (unsupported.length > 0)
    throw new RenderError(
      `${where}: ${unsupported.join(', ')} not rendered by this check (it reproduces ` +
        `${[...SUPPORTED_FIELDS].slice(2).join(', ')}); extend scripts/kustomize-render.ts first`,
    );
  return { ...k, kind };
}

/** `kubectl kustomize dir`, for the features listed above. */
export function build(dir: string, options: RenderOptions, extraComponents: string[] = []): Manifest[] {
  const k = readKustomization(dir, options.root);
  if (k.kind !== 'Kustomization')
    throw new RenderError(
      `${relative(options.root, dir)}: a Component is built only as part of a Kustomization`,
    );
  return accumulate(dir, k, [], options, extraComponents);
}

/** A kustomization's (or a component's) resources, components, generators and transformers. */
function accumulate(
  dir: string,
  k: KObject,
  before: Manifest[],
  options: RenderOptions,
  extraComponents: string[] = [],
): Manifest[] {
  const where = relative(options.root, kustomizationFile(dir) ?? dir);
  let manifests = [...before];
  for (const entry of strings(k.resources, `${where}: resources`)) {
    if (entry.includes('://'))
      throw new RenderError(`${where}: remote resource ${entry} not rendered by this check`);
    const path = resolve(dir, entry);
    if (!existsSync(path)) throw new RenderError(`${where}: resource ${entry} does not exist`);
    if (statSync(path).isDirectory()) manifests = add(manifests, build(path, options), where);
    else manifests = add(manifests, objectsOf(path, options.root), where);
  }
  for (const entry of [...strings(k.components, `${where}: components`), ...extraComponents]) {
    const path = resolve(dir, entry);
    const component = readKustomization(path, options.root);
    if (component.kind !== 'Component')
      throw new RenderError(`${where}: components entry ${entry} is not a Component`);
    manifests = accumulate(path, component, manifests, options);
  }
  for (const secret of generateSecrets(dir, k.secretGenerator, where, options))
    manifests = add(manifests, [secret], where);
  for (const patch of list(k.patches, `${where}: patches`)) applyPatch(dir, patch, manifests, where, options);
  if (k.namespace !== undefined) setNamespace(manifests, k.namespace, where);
  for (const entry of list(k.replicas, `${where}: replicas`)) setReplicas(entry, manifests, where);
  for (const entry of list(k.images, `${where}: images`)) setImage(entry, manifests, where);
  return manifests;
}

function objectsOf(file: string, root: string): Manifest[] {
  const source = relative(root, file);
  return readYaml(file, root).map((object) => {
    if (!isObject(object) || typeof object.kind !== 'string' || typeof object.apiVersion !== 'string')
      throw new RenderError(`${source}: every document must be an object with apiVersion and kind`);
    return { source, object };
  });
}

/** kustomize refuses two objects with one identity (group, kind, namespace, name). */
function add(manifests: Manifest[], more: Manifest[], where: string): Manifest[] {
  const seen = new Set(manifests.map((m) => identity(m.object)));
  for (const m of more) {
    const id = identity(m.object);
    if (seen.has(id)) throw new RenderError(`${where}: ${m.source} adds ${id} a second time`);
    seen.add(id);
  }
  return [...manifests, ...more];
}

export function identity(object: KObject): string {
  const meta = isObject(object.metadata) ? object.metadata : {};
  const group = String(object.apiVersion).includes('/') ? String(object.apiVersion).split('/')[0] : 'core';
  return `${group}/${String(object.kind)}/${String(meta.namespace ?? '~')}/${String(meta.name)}`;
}

function generateSecrets(dir: string, value: unknown, where: string, options: RenderOptions): Manifest[] {
  return list(value, `${where}: secretGenerator`).map((g) => {
    only(g, ['name', 'envs', 'literals', 'type', 'options'], `${where}: secretGenerator`);
    const generatorOptions = isObject(g.options) ? g.options : {};
    if (generatorOptions.disableNameSuffixHash !== true || Object.keys(generatorOptions).length !== 1)
      throw new RenderError(
        `${where}: secretGenerator ${String(g.name)} needs options.disableNameSuffixHash: true alone ` +
          '(this check does not compute kustomize’s name hash, nor rewrite the references to it)',
      );
    if (typeof g.name !== 'string') throw new RenderError(`${where}: secretGenerator without a name`);
    const data: Record<string, string> = {};
    const put = (pair: string, from: string) => {
      const at = pair.indexOf('=');
      const key = pair.slice(0, at);
      if (at < 1 || !/^[-._a-zA-Z0-9]+$/.test(key))
        throw new RenderError(`${from}: "${key || pair}" is not KEY=VALUE`);
      if (key in data) throw new RenderError(`${from}: ${key} given twice`);
      data[key] = Buffer.from(pair.slice(at + 1)).toString('base64');
    };
    for (const env of strings(g.envs, `${where}: secretGenerator envs`)) {
      let file = resolve(dir, env);
      if (!existsSync(file) && options.exampleSecrets && existsSync(`${file}.example`)) {
        options.notes?.push(
          `${relative(options.root, file)} is not there: its keys are read from ${env}.example`,
        );
        file = `${file}.example`;
      }
      const from = relative(options.root, file);
      if (!existsSync(file))
        throw new RenderError(`${where}: secretGenerator env file ${env} does not exist`);
      for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
        if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
        put(line, from);
      }
    }
    for (const literal of strings(g.literals, `${where}: secretGenerator literals`)) put(literal, where);
    const object: KObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: g.name },
      type: g.type ?? 'Opaque',
      data,
    };
    return { source: `${where} (secretGenerator)`, object };
  });
}

/** kustomize's `patches`: a strategic merge patch (one object) or a JSON 6902 patch (a list). */
function applyPatch(
  dir: string,
  entry: KObject,
  manifests: Manifest[],
  where: string,
  options: RenderOptions,
) {
  only(entry, ['path', 'patch', 'target'], `${where}: patches`);
  const from =
    typeof entry.path === 'string' ? relative(options.root, resolve(dir, entry.path)) : `${where}: patch`;
  const documents =
    typeof entry.path === 'string'
      ? readYaml(resolve(dir, entry.path), options.root)
      : typeof entry.patch === 'string'
        ? parseYaml(entry.patch, from)
        : [];
  if (documents.length !== 1) throw new RenderError(`${from}: a patch must be one YAML document`);
  const patch = documents[0];
  const target = entry.target === undefined ? undefined : entry.target;
  if (target !== undefined && !isObject(target)) throw new RenderError(`${from}: target must be a mapping`);
  if (Array.isArray(patch)) {
    if (!target) throw new RenderError(`${from}: a JSON 6902 patch needs a target`);
    for (const m of select(manifests, target, from))
      m.object = jsonPatch(m.object, patch, `${from} on ${m.source}`);
    return;
  }
  if (!isObject(patch)) throw new RenderError(`${from}: a patch must be a mapping or a list of operations`);
  const meta = isObject(patch.metadata) ? patch.metadata : {};
  const selector = target ?? {
    ...(typeof patch.apiVersion === 'string' && apiVersionSelector(patch.apiVersion)),
    kind: patch.kind,
    name: meta.name,
  };
  for (const m of select(manifests, selector, from)) m.object = mergePatch(m.object, patch, from, '');
}

function apiVersionSelector(apiVersion: string): KObject {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  return { group, version };
}

/** The objects a patch target selects (name is a regular expression in kustomize); none fails. */
function select(manifests: Manifest[], target: KObject, from: string): Manifest[] {
  only(target, ['group', 'version', 'kind', 'name', 'namespace'], `${from}: target`);
  const matches = manifests.filter(({ object }) => {
    const meta = isObject(object.metadata) ? object.metadata : {};
    const { group, version } = apiVersionSelector(String(object.apiVersion));
    return (
      (target.group === undefined || target.group === group) &&
      (target.version === undefined || target.version === version) &&
      (target.kind === undefined || target.kind === object.kind) &&
      (target.namespace === undefined || target.namespace === meta.namespace) &&
      (target.name === undefined || new RegExp(`^(?:${String(target.name)})$`).test(String(meta.name)))
    );
  });
  if (matches.length === 0) throw new RenderError(`${from}: no object matches ${JSON.stringify(target)}`);
  return matches;
}

/** A strategic merge patch whose lists would be merged by key by kustomize is refused. */
function mergePatch(into: KObject, patch: KObject, from: string, path: string): KObject {
  const out: KObject = { ...into };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$'))
      throw new RenderError(`${from}: directive ${path}/${key} not rendered by this check`);
    if (Array.isArray(value))
      throw new RenderError(
        `${from}: ${path}/${key} is a list, which kustomize merges by key: use a JSON 6902 patch for it`,
      );
    if (value === null) delete out[key];
    else if (isObject(value) && isObject(out[key]))
      out[key] = mergePatch(out[key] as KObject, value, from, `${path}/${key}`);
    else out[key] = structuredClone(value);
  }
  return out;
}

/** RFC 6902 add, replace and remove (what overlays need); other operations are refused. */
function jsonPatch(object: KObject, operations: unknown[], from: string): KObject {
  const root = structuredClone(object);
  for (const operation of operations) {
    if (!isObject(operation) || typeof operation.path !== 'string' || !operation.path.startsWith('/'))
      throw new RenderError(`${from}: each operation needs an op and a path starting with /`);
    const { op, path } = operation;
    if (op !== 'add' && op !== 'replace' && op !== 'remove')
      throw new RenderError(`${from}: op ${String(op)} not rendered by this check (add, replace, remove)`);
    if (op !== 'remove' && !('value' in operation))
      throw new RenderError(`${from}: ${op} ${path} needs a value`);
    const keys = path
      .slice(1)
      .split('/')
      .map((key) => key.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = keys.pop() as string;
    let parent: unknown = root;
    for (const key of keys) {
      parent = Array.isArray(parent) ? parent[Number(key)] : isObject(parent) ? parent[key] : undefined;
      if (parent === undefined) throw new RenderError(`${from}: ${op} ${path}: no ${key} on the way`);
    }
    const value = structuredClone(operation.value);
    if (Array.isArray(parent)) {
      const index = last === '-' ? parent.length : Number(last);
      const bound = op === 'add' ? parent.length : parent.length - 1;
      if (!/^(0|[1-9][0-9]*|-)$/.test(last) || index > bound || (last === '-' && op !== 'add'))
        throw new RenderError(`${from}: ${op} ${path}: no index ${last}`);
      if (op === 'add') parent.splice(index, 0, value);
      else if (op === 'replace') parent[index] = value;
      else parent.splice(index, 1);
    } else if (isObject(parent)) {
      if (op !== 'add' && !(last in parent)) throw new RenderError(`${from}: ${op} ${path}: nothing there`);
      if (op === 'remove') delete parent[last];
      else parent[last] = value;
    } else throw new RenderError(`${from}: ${op} ${path}: its parent is not an object or a list`);
  }
  return root;
}

/** kustomize sets every namespaced object's namespace, and names a Namespace object after it. */
function setNamespace(manifests: Manifest[], namespace: unknown, where: string) {
  if (typeof namespace !== 'string') throw new RenderError(`${where}: namespace must be a string`);
  for (const m of manifests) {
    const meta = isObject(m.object.metadata) ? { ...m.object.metadata } : {};
    if (m.object.kind === 'Namespace') meta.name = namespace;
    else if (!CLUSTER_SCOPED.has(String(m.object.kind))) meta.namespace = namespace;
    m.object = { ...m.object, metadata: meta };
  }
}

function setReplicas(entry: KObject, manifests: Manifest[], where: string) {
  only(entry, ['name', 'count'], `${where}: replicas`);
  if (!Number.isInteger(entry.count))
    throw new RenderError(`${where}: replicas ${String(entry.name)} needs a count`);
  const targets = manifests.filter(
    (m) =>
      WORKLOADS.has(String(m.object.kind)) &&
      isObject(m.object.metadata) &&
      m.object.metadata.name === entry.name,
  );
  // kustomize ignores a name it does not find; a misspelt name here is a mistake, so it fails.
  if (targets.length === 0)
    throw new RenderError(`${where}: replicas: no workload named ${String(entry.name)}`);
  for (const m of targets)
    m.object = { ...m.object, spec: { ...(m.object.spec as KObject), replicas: entry.count } };
}

/** The images transformer: containers' and init containers' images named `name` get the new parts. */
function setImage(entry: KObject, manifests: Manifest[], where: string) {
  only(entry, ['name', 'newName', 'newTag', 'digest'], `${where}: images`);
  if (typeof entry.name !== 'string') throw new RenderError(`${where}: images entry without a name`);
  if (entry.newTag !== undefined && entry.digest !== undefined)
    throw new RenderError(
      `${where}: images ${entry.name}: newTag and digest together not rendered by this check`,
    );
  let found = false;
  const visit = (value: unknown, key?: string): unknown => {
    if (Array.isArray(value))
      return value.map((item) =>
        (key === 'containers' || key === 'initContainers') && isObject(item) && typeof item.image === 'string'
          ? { ...item, image: retag(item.image) }
          : visit(item),
      );
    if (!isObject(value)) return value;
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, visit(v, k)]));
  };
  const retag = (image: string): string => {
    const match = /^(.*?)(?::([^:/@]+))?(?:@(.+))?$/.exec(image) as RegExpExecArray;
    const [, name = '', tag, digest] = match;
    if (name !== entry.name) return image;
    found = true;
    const newName = typeof entry.newName === 'string' ? entry.newName : name;
    if (entry.digest !== undefined) return `${newName}@${String(entry.digest)}`;
    if (entry.newTag !== undefined) return `${newName}:${String(entry.newTag)}`;
    return `${newName}${tag ? `:${tag}` : ''}${digest ? `@${digest}` : ''}`;
  };
  for (const m of manifests) m.object = visit(m.object) as KObject;
  // kustomize ignores an image it does not find; here that is a mistake, as for replicas.
  if (!found) throw new RenderError(`${where}: images: no container uses ${entry.name}`);
}

function list(value: unknown, where: string): KObject[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every(isObject))
    throw new RenderError(`${where} must be a list of mappings`);
  return value;
}

function strings(value: unknown, where: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
    throw new RenderError(`${where} must be a list of strings`);
  return value;
}

function only(value: KObject, fields: string[], where: string) {
  const extra = Object.keys(value).filter((key) => !fields.includes(key));
  if (extra.length > 0) throw new RenderError(`${where}: ${extra.join(', ')} not rendered by this check`);
}

/** The folders under `root` holding a kustomization, sorted. */
export function kustomizationDirs(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    if (kustomizationFile(dir)) out.push(dir);
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
    }
  };
  walk(root);
  return out.sort();
}
