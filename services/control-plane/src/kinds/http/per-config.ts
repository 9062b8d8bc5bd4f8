/**
 * Values a call works out from an HTTP tool's config alone (its parsed URL template, the secrets it
 * names, its input schema), kept per config object. A config read through the binding cache is
 * deep-frozen and shared by every call while cached, so each value is worked out once for it
 * instead of on every call; a config that is not frozen (a trial run's, one being saved) may still
 * change, so its value is worked out each time.
 */
import { deepFreeze } from '@bindery/context-ops';

/** `compute`, remembered per frozen config object; what it returns is frozen, since calls share it. */
export function perConfig<C extends object, T>(compute: (config: C) => T): (config: C) => T {
  const values = new WeakMap<C, T>();
  return (config) => {
    if (!Object.isFrozen(config)) return compute(config);
    if (values.has(config)) return values.get(config) as T;
    const value = deepFreeze(compute(config));
    values.set(config, value);
    return value;
  };
}
