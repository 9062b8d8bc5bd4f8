/**
 * `pnpm lint:kubernetes`: builds every kustomization under deploy/kubernetes (the base, each
 * overlay, and each overlay with each optional component) and checks every object a build makes,
 * offline and without a cluster:
 *
 * - against its kind's schema from the Kubernetes API's OpenAPI document (kubernetes-models) or,
 *   for a ServiceMonitor, the Prometheus Operator's CRD (@kubernetes-models/prometheus-operator):
 *   types, required fields, enums and formats;
 * - strictly: a field its schema does not name fails, as the API server's strict field validation
 *   refuses it (`kubectl apply` does by default), which the schemas alone let pass;
 * - for what the API server checks beyond the schema and the check can see: names, a workload's
 *   selector against its pod labels, named ports;
 * - and, in a complete build (an overlay), the references a schema cannot see: each Secret and
 *   ConfigMap key a pod reads, each Service's and disruption budget's pods, each ServiceMonitor's
 *   Services, ports and token.
 *
 * What it cannot see (admission, defaulting, images, the cluster's version) is in
 * docs/decisions/076-kubernetes-manifests.md. Run as a script it prints one line per build and
 * exits 1 on any problem; its own tests (kubernetes-check.test.ts) feed it broken manifests.
 */
import { relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  build,
  isObject,
  kustomizationDirs,
  readKustomization,
  RenderError,
  type KObject,
  type Manifest,
} from './kustomize-render.ts';

/** API groups whose schemas come from a package other than the Kubernetes API's. */
const CRD_PACKAGES: Record<string, string> = {
  'monitoring.coreos.com': '@kubernetes-models/prometheus-operator/monitoring.coreos.com',
};

/** A kubernetes-models class: its validate() throws with ajv's errors. */
interface Model {
  apiVersion: string;
  kind: string;
  prototype: { validate(this: unknown): void };
}

const models = new Map<string, Promise<Model | undefined>>();

/** The model class of an apiVersion and kind, or undefined when no bundled schema has it. */
export function modelFor(apiVersion: string, kind: string): Promise<Model | undefined> {
  const key = `${apiVersion} ${kind}`;
  let model = models.get(key);
  if (!model) {
    model = loadModel(apiVersion, kind);
    models.set(key, model);
  }
  return model;
}

async function loadModel(apiVersion: string, kind: string): Promise<Model | undefined> {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  // The module path is built from the manifest: only well-formed parts reach import().
  if (!/^v[0-9]+((alpha|beta)[0-9]+)?$/.test(version ?? '') || !/^[a-z0-9.-]*$/.test(group ?? ''))
    return undefined;
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind)) return undefined;
  const base =
    CRD_PACKAGES[group ?? ''] ?? (group === '' ? 'kubernetes-models' : `kubernetes-models/${group}`);
  try {
    const module = (await import(`${base}/${version}/${kind}`)) as Record<string, unknown>;
    const model = module[kind] as Model | undefined;
    // On a case-insensitive file system `deployment` would load Deployment's module.
    return model?.apiVersion === apiVersion && model.kind === kind ? model : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The schema's complaints about `object`, and its fields the schema does not name. The bundled
 * validators (ajv, compiled) read each property their schema names and enumerate the keys only of
 * maps (labels, data); so a key of an object whose properties were read, never read itself and in
 * an object never enumerated, is a field the schema does not have. Objects whose schema names no
 * property (free-form ones) are read by nothing and so left alone.
 */
export function schemaProblems(model: Model, object: KObject): string[] {
  const reads = new Map<object, Set<string>>();
  const enumerated = new Set<object>();
  const proxies = new WeakMap<object, object>();
  const note = (target: object, key: string) => {
    let keys = reads.get(target);
    if (!keys) reads.set(target, (keys = new Set()));
    keys.add(key);
  };
  const wrap = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null) return value;
    let proxy = proxies.get(value);
    if (!proxy) {
      proxy = new Proxy(value, {
        get(target, key, receiver) {
          if (typeof key === 'string') note(target, key);
          return wrap(Reflect.get(target, key, receiver));
        },
        has(target, key) {
          if (typeof key === 'string') note(target, key);
          return Reflect.has(target, key);
        },
        ownKeys(target) {
          enumerated.add(target);
          return Reflect.ownKeys(target);
        },
      });
      proxies.set(value, proxy);
    }
    return proxy;
  };
  const problems: string[] = [];
  try {
    model.prototype.validate.call(wrap(object));
  } catch (error) {
    const errors = (error as { errors?: { instancePath?: string; message?: string }[] }).errors;
    if (!Array.isArray(errors)) throw error;
    for (const e of errors) problems.push(`${e.instancePath || '/'}: ${e.message ?? 'is invalid'}`);
  }
  const walk = (value: unknown, path: string) => {
    if (Array.isArray(value)) value.forEach((item, i) => walk(item, `${path}/${i}`));
    if (!isObject(value)) return;
    const read = reads.get(value);
    const strict = read !== undefined && !enumerated.has(value);
    for (const [key, child] of Object.entries(value)) {
      if (strict && !read.has(key)) problems.push(`${path}/${key}: unknown field "${key}"`);
      else walk(child, `${path}/${key}`);
    }
  };
  walk(object, '');
  return [...new Set(problems)];
}

const DNS_SUBDOMAIN = /^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^(?=.{1,63}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const RFC1035_LABEL = /^(?=.{1,63}$)[a-z]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_VALUE = /^(?=.{0,63}$)(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const PORT_NAME = /^(?=.{1,15}$)(?=.*[a-z])[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const POD_OWNERS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job']);

function obj(value: unknown): KObject {
  return isObject(value) ? value : {};
}
function arr(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}
function nameOf(object: KObject): string {
  return String(obj(object.metadata).name);
}

/** A workload's pod template, if the object has one. */
function podTemplate(object: KObject): { labels: KObject; spec: KObject } | undefined {
  const spec = obj(object.spec);
  const template = POD_OWNERS.has(String(object.kind))
    ? spec.template
    : object.kind === 'CronJob'
      ? obj(obj(spec.jobTemplate).spec).template
      : undefined;
  if (!isObject(template)) return undefined;
  return { labels: obj(obj(template.metadata).labels), spec: obj(template.spec) };
}

function containers(spec: KObject): KObject[] {
  return [...arr(spec.initContainers), ...arr(spec.containers)].filter(isObject);
}

function matches(selector: KObject, labels: KObject): boolean {
  const entries = Object.entries(selector);
  return entries.length > 0 && entries.every(([key, value]) => labels[key] === value);
}

/** What the API server checks of one object beyond its schema, as far as the object shows. */
export function objectProblems(object: KObject): string[] {
  const problems: string[] = [];
  const meta = obj(object.metadata);
  const name = meta.name;
  const format =
    object.kind === 'Service' ? RFC1035_LABEL : object.kind === 'Namespace' ? DNS_LABEL : DNS_SUBDOMAIN;
  if (typeof name !== 'string' || !format.test(name))
    problems.push(`/metadata/name: ${JSON.stringify(name)} is not a valid ${String(object.kind)} name`);
  if (meta.namespace !== undefined && !DNS_LABEL.test(String(meta.namespace)))
    problems.push(`/metadata/namespace: ${JSON.stringify(meta.namespace)} is not a valid namespace`);
  const labels = (where: string, value: unknown) => {
    for (const [key, v] of Object.entries(obj(value)))
      if (typeof v !== 'string' || !LABEL_VALUE.test(v))
        problems.push(`${where}/${key}: not a valid label value`);
  };
  labels('/metadata/labels', meta.labels);
  const pod = podTemplate(object);
  if (!pod) return problems;
  labels('/spec/template/metadata/labels', pod.labels);
  const selector = obj(obj(obj(object.spec).selector).matchLabels);
  if (object.kind !== 'CronJob' && object.kind !== 'Job' && !matches(selector, pod.labels))
    problems.push('/spec/selector: matchLabels must be non-empty and match the pod template’s labels');
  for (const container of containers(pod.spec)) {
    const where = `container ${String(container.name)}`;
    const ports = arr(container.ports).map((port) => obj(port).name);
    for (const port of ports)
      if (port !== undefined && (typeof port !== 'string' || !PORT_NAME.test(port)))
        problems.push(`${where}: port name ${JSON.stringify(port)} is not valid (15 characters at most)`);
    for (const probe of ['startupProbe', 'readinessProbe', 'livenessProbe']) {
      const handler = obj(container[probe]);
      const port = obj(handler.httpGet).port ?? obj(handler.tcpSocket).port ?? obj(handler.grpc).port;
      if (typeof port === 'string' && !ports.includes(port))
        problems.push(`${where}: ${probe} uses port "${port}", which the container does not name`);
    }
  }
  return problems;
}

/** The references between the objects of a complete build that no schema sees. */
export function referenceProblems(manifests: Manifest[]): string[] {
  const problems: string[] = [];
  const objects = manifests.map((m) => m.object);
  const namespaceOf = (object: KObject) => obj(object.metadata).namespace;
  const keysOf = (kind: string, name: unknown, namespace: unknown): Set<string> | undefined => {
    const found = objects.find((o) => o.kind === kind && nameOf(o) === name && namespaceOf(o) === namespace);
    if (!found) return undefined;
    const fields = kind === 'Secret' ? ['data', 'stringData'] : ['data', 'binaryData'];
    return new Set(fields.flatMap((field) => Object.keys(obj(found[field]))));
  };
  const needs = (
    where: string,
    kind: string,
    ref: KObject,
    keyField: string | undefined,
    namespace: unknown,
  ) => {
    const keys = keysOf(kind, ref.name, namespace);
    if (ref.optional === true) return;
    if (!keys) problems.push(`${where}: ${kind} ${String(ref.name)} is not in the build`);
    else if (keyField !== undefined && !keys.has(String(ref[keyField])))
      problems.push(`${where}: ${kind} ${String(ref.name)} has no key ${String(ref[keyField])}`);
  };
  const pods = objects.flatMap((object) => {
    const pod = podTemplate(object);
    return pod ? [{ object, ...pod }] : [];
  });
  for (const { object, spec } of pods) {
    const ns = namespaceOf(object);
    for (const container of containers(spec)) {
      const where = `${String(object.kind)} ${nameOf(object)}, container ${String(container.name)}`;
      for (const env of arr(container.env).map(obj)) {
        const from = obj(env.valueFrom);
        if (isObject(from.secretKeyRef))
          needs(`${where}, env ${String(env.name)}`, 'Secret', from.secretKeyRef, 'key', ns);
        if (isObject(from.configMapKeyRef))
          needs(`${where}, env ${String(env.name)}`, 'ConfigMap', from.configMapKeyRef, 'key', ns);
      }
      for (const source of arr(container.envFrom).map(obj)) {
        if (isObject(source.secretRef)) needs(`${where}, envFrom`, 'Secret', source.secretRef, undefined, ns);
        if (isObject(source.configMapRef))
          needs(`${where}, envFrom`, 'ConfigMap', source.configMapRef, undefined, ns);
      }
    }
    for (const volume of arr(spec.volumes).map(obj)) {
      const where = `${String(object.kind)} ${nameOf(object)}, volume ${String(volume.name)}`;
      const secret = obj(volume.secret);
      if (isObject(volume.secret))
        needs(where, 'Secret', { ...secret, name: secret.secretName }, undefined, ns);
      if (isObject(volume.configMap)) needs(where, 'ConfigMap', volume.configMap, undefined, ns);
    }
  }
  const services = objects.filter((o) => o.kind === 'Service');
  for (const service of services) {
    const where = `Service ${nameOf(service)}`;
    const spec = obj(service.spec);
    if (!isObject(spec.selector)) continue;
    const backends = pods.filter(
      (p) => namespaceOf(p.object) === namespaceOf(service) && matches(obj(spec.selector), p.labels),
    );
    if (backends.length === 0) problems.push(`${where}: its selector matches no pod template in the build`);
    const portNames = new Set(
      backends.flatMap((p) => containers(p.spec).flatMap((c) => arr(c.ports).map((port) => obj(port).name))),
    );
    for (const port of arr(spec.ports).map(obj))
      if (typeof port.targetPort === 'string' && backends.length > 0 && !portNames.has(port.targetPort))
        problems.push(`${where}: targetPort "${port.targetPort}" is no port name of its pods`);
  }
  for (const budget of objects.filter((o) => o.kind === 'PodDisruptionBudget')) {
    const selector = obj(obj(obj(budget.spec).selector).matchLabels);
    if (!pods.some((p) => namespaceOf(p.object) === namespaceOf(budget) && matches(selector, p.labels)))
      problems.push(
        `PodDisruptionBudget ${nameOf(budget)}: its selector matches no pod template in the build`,
      );
  }
  for (const monitor of objects.filter((o) => o.kind === 'ServiceMonitor')) {
    const where = `ServiceMonitor ${nameOf(monitor)}`;
    const spec = obj(monitor.spec);
    const selected = services.filter(
      (s) =>
        namespaceOf(s) === namespaceOf(monitor) &&
        matches(obj(obj(spec.selector).matchLabels), obj(obj(s.metadata).labels)),
    );
    if (selected.length === 0) problems.push(`${where}: its selector matches no Service in the build`);
    const portNames = new Set(selected.flatMap((s) => arr(obj(s.spec).ports).map((port) => obj(port).name)));
    for (const endpoint of arr(spec.endpoints).map(obj)) {
      if (typeof endpoint.port === 'string' && selected.length > 0 && !portNames.has(endpoint.port))
        problems.push(`${where}: endpoint port "${endpoint.port}" is no port name of its Services`);
      for (const ref of [obj(endpoint.authorization).credentials, endpoint.bearerTokenSecret])
        if (isObject(ref))
          needs(`${where}, endpoint ${String(endpoint.port)}`, 'Secret', ref, 'key', namespaceOf(monitor));
    }
  }
  return problems;
}

/** Every problem of one build's objects (`complete`: an overlay, whose references must resolve). */
export async function checkManifests(manifests: Manifest[], complete: boolean): Promise<string[]> {
  const problems: string[] = [];
  for (const { source, object } of manifests) {
    const label = `${source}: ${String(object.kind)} ${nameOf(object)}`;
    const model = await modelFor(String(object.apiVersion), String(object.kind));
    if (!model) {
      problems.push(`${label}: no bundled schema for ${String(object.apiVersion)} ${String(object.kind)}`);
      continue;
    }
    for (const problem of [...schemaProblems(model, object), ...objectProblems(object)])
      problems.push(`${label}: ${problem}`);
  }
  if (complete) problems.push(...referenceProblems(manifests));
  return problems;
}

export interface BuildReport {
  /** The kustomization built, and the components added to it. */
  name: string;
  objects: number;
  problems: string[];
}

/**
 * Builds and checks every kustomization under `dir`: each alone; the complete ones (those no other
 * kustomization there includes: the overlays) with their references, and again with each component
 * they do not include yet.
 */
export async function checkTree(dir: string, root: string, notes: string[] = []): Promise<BuildReport[]> {
  const options = { root, exampleSecrets: true, notes };
  const reports: BuildReport[] = [];
  const kustomizations: string[] = [];
  const components: string[] = [];
  /** Folders another kustomization includes as a resource, and each one's own components. */
  const included = new Set<string>();
  const ownComponents = new Map<string, Set<string>>();
  for (const found of kustomizationDirs(dir)) {
    let k: KObject;
    try {
      k = readKustomization(found, root);
    } catch (error) {
      reports.push({ name: relative(root, found), objects: 0, problems: [messageOf(error)] });
      continue;
    }
    (k.kind === 'Component' ? components : kustomizations).push(found);
    for (const entry of arr(k.resources)) if (typeof entry === 'string') included.add(resolve(found, entry));
    ownComponents.set(found, new Set(arr(k.components).map((entry) => resolve(found, String(entry)))));
  }
  const run = async (target: string, complete: boolean, extra: string[]) => {
    const name = [target, ...extra].map((d) => relative(root, d)).join(' + ');
    try {
      const manifests = build(target, options, extra);
      reports.push({ name, objects: manifests.length, problems: await checkManifests(manifests, complete) });
    } catch (error) {
      reports.push({ name, objects: 0, problems: [messageOf(error)] });
    }
  };
  for (const target of kustomizations) {
    const complete = !included.has(target);
    await run(target, complete, []);
    if (!complete) continue;
    for (const component of components)
      if (!ownComponents.get(target)?.has(component)) await run(target, true, [component]);
  }
  if (kustomizations.length === 0)
    reports.push({ name: relative(root, dir) || '.', objects: 0, problems: ['no kustomization found'] });
  return reports;
}

function messageOf(error: unknown): string {
  if (error instanceof RenderError) return error.message;
  throw error;
}

/** The lint step: checks `dir` (deploy/kubernetes by default), prints a line per build, 0 or 1. */
export async function main(dir = 'deploy/kubernetes'): Promise<number> {
  const root = fileURLToPath(new URL('..', import.meta.url));
  const notes: string[] = [];
  const reports = await checkTree(resolve(root, dir), root, notes);
  for (const note of new Set(notes)) console.log(`note: ${note}`);
  for (const report of reports) {
    console.log(
      `${report.problems.length === 0 ? 'ok  ' : 'FAIL'} ${report.name} (${report.objects} objects)`,
    );
    for (const problem of report.problems) console.log(`       ${problem}`);
  }
  const failed = reports.filter((r) => r.problems.length > 0).length;
  console.log(
    failed === 0
      ? `kubernetes: ${reports.length} builds checked against the bundled schemas, no problem`
      : `kubernetes: ${failed} of ${reports.length} builds have problems`,
  );
  return failed === 0 ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv[2]);
}
