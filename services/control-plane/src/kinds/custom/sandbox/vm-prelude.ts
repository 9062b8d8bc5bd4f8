/**
 * The JavaScript that runs inside each sandbox before the tool's own module: it builds `console`,
 * the `ctx` object handed to the tool and the runner that calls the tool's default export. It is
 * one function expression, called with the three native functions of the call (host calls,
 * console lines, and notices: progress reports and log lines for the caller) and the call's
 * configuration as JSON, so the natives are only ever reachable
 * through the closures built here, never as globals the tool could take.
 *
 * It keeps its own references to JSON, Object and Error before the tool's code runs: a tool that
 * replaces globals or pollutes prototypes only changes what it itself sees. Nothing here is a
 * security boundary (the sandbox is); this code is about clear errors and a predictable `ctx`.
 *
 * Answers cross the boundary as strings with a one-character tag, so the worker never has to read
 * properties (and run getters) of an object the tool could have shaped:
 *   host call answers  '1' + JSON result | '0' + JSON {code, message}
 *   the run's outcome  '1' + JSON result | '0' + JSON description of what was thrown
 *                      | '2' + JSON description (the result is not JSON) | '3' + length (too large)
 */
export const PRELUDE = String.raw`(function (hostCall, consoleWrite, notify, configJson) {
  'use strict';
  const parse = JSON.parse;
  const stringify = JSON.stringify;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const keys = Object.keys;
  const isArray = Array.isArray;
  const StringOf = String;
  const ErrorClass = Error;
  const TypeErrorClass = TypeError;
  const RangeErrorClass = RangeError;
  const finite = Number.isFinite;
  const config = parse(configJson);
  const maxLine = config.maxConsoleBytes;
  const maxMessage = 4000;

  function text(value) {
    try {
      if (typeof value === 'string') return value;
      if (value instanceof ErrorClass) return StringOf(value.name) + ': ' + StringOf(value.message);
      if (typeof value === 'object' && value !== null) {
        const json = stringify(value);
        if (json !== undefined) return json;
      }
      return StringOf(value);
    } catch (_) {
      return '[a value that cannot be printed]';
    }
  }

  // One console line: arguments joined by spaces, cut just past what the capture keeps (it adds
  // the truncation marker).
  function writer(level) {
    return function () {
      let line = '';
      for (let i = 0; i < arguments.length && line.length <= maxLine; i += 1) {
        line += (i > 0 ? ' ' : '') + text(arguments[i]);
      }
      consoleWrite(level, line.length > maxLine ? line.slice(0, maxLine + 1) : line);
    };
  }
  const consoleObject = {};
  const levels = ['log', 'info', 'warn', 'error', 'debug'];
  for (let i = 0; i < levels.length; i += 1) consoleObject[levels[i]] = writer(levels[i]);
  defineProperty(globalThis, 'console', { value: freeze(consoleObject), writable: true, configurable: true });

  async function call(fn, args) {
    const answer = await hostCall(fn, stringify(args));
    if (answer[0] === '1') return parse(answer.slice(1));
    const failure = parse(answer.slice(1));
    const error = new ErrorClass(failure.message);
    error.code = failure.code;
    if (failure.details !== undefined) error.details = freeze(failure.details);
    throw error;
  }

  function response(answer) {
    const headers = answer.headers;
    defineProperty(headers, 'get', {
      value: function get(name) {
        const value = answer.headers[StringOf(name).toLowerCase()];
        return typeof value === 'string' ? value : null;
      },
    });
    const body = answer.body;
    return freeze({
      status: answer.status,
      statusText: answer.statusText,
      ok: answer.status >= 200 && answer.status < 300,
      url: answer.url,
      headers: freeze(headers),
      text: async function text() {
        return body;
      },
      json: async function json() {
        return parse(body);
      },
    });
  }

  const has = (name) => config.functions.indexOf(name) !== -1;
  const ctx = {};
  if (has('context.read') || has('context.write')) {
    const context = {};
    if (has('context.read')) {
      context.read = async function read(path) {
        if (path === undefined) path = '';
        if (typeof path !== 'string') {
          throw new TypeErrorClass('ctx.context.read(path): path is a JSON pointer string ("" for the whole context)');
        }
        return call('context.read', { path: path });
      };
    }
    if (has('context.write')) {
      context.write = async function write(op, args) {
        if (typeof op !== 'string') {
          throw new TypeErrorClass('ctx.context.write(op, args): op is the name of an operation, e.g. "create"');
        }
        if (args === undefined) args = {};
        if (typeof args !== 'object' || args === null || isArray(args)) {
          throw new TypeErrorClass('ctx.context.write(op, args): args is an object');
        }
        return call('context.write', { op: op, args: args });
      };
    }
    ctx.context = freeze(context);
  }
  if (has('fetch')) {
    ctx.fetch = async function fetch(url, init) {
      if (typeof url !== 'string') throw new TypeErrorClass('ctx.fetch(url, init): url is a string');
      if (init === undefined || init === null) init = {};
      if (typeof init !== 'object') throw new TypeErrorClass('ctx.fetch(url, init): init is an object');
      const method = init.method === undefined ? 'GET' : init.method;
      if (typeof method !== 'string') throw new TypeErrorClass('ctx.fetch(url, init): init.method is a string');
      const headers = {};
      if (init.headers !== undefined && init.headers !== null) {
        if (typeof init.headers !== 'object' || isArray(init.headers)) {
          throw new TypeErrorClass('ctx.fetch(url, init): init.headers is an object of header names and string values');
        }
        const names = keys(init.headers);
        for (let i = 0; i < names.length; i += 1) {
          const value = init.headers[names[i]];
          if (typeof value !== 'string') {
            throw new TypeErrorClass('ctx.fetch(url, init): header ' + names[i] + ' is not a string');
          }
          defineProperty(headers, names[i], { value: value, enumerable: true });
        }
      }
      const request = { url: url, method: method, headers: headers };
      if (init.body !== undefined && init.body !== null) {
        if (typeof init.body !== 'string') {
          throw new TypeErrorClass('ctx.fetch(url, init): init.body is a string (JSON.stringify an object first)');
        }
        request.body = init.body;
      }
      return response(await call('fetch', request));
    };
  }
  // ctx.progress and ctx.log: checked here whether or not the caller listens, so a mistake shows
  // in every call; sent (natives, one way, never awaited) only when it does.
  const logLevels = config.logLevels;
  const threshold = config.logLevel === null ? -1 : logLevels.indexOf(config.logLevel);
  let lastProgress = null;
  ctx.progress = function progress(value, total, message) {
    const usage = 'ctx.progress(progress, total, message): ';
    if (typeof value !== 'number' || !finite(value)) throw new TypeErrorClass(usage + 'progress is a finite number');
    if (total === null) total = undefined;
    if (total !== undefined && (typeof total !== 'number' || !finite(total))) {
      throw new TypeErrorClass(usage + 'total is a finite number, or left out when unknown');
    }
    if (message === null) message = undefined;
    if (message !== undefined && typeof message !== 'string') {
      throw new TypeErrorClass(usage + 'message is a string, or left out');
    }
    if (lastProgress !== null && value <= lastProgress) {
      throw new RangeErrorClass(usage + 'progress must grow with each report (it was ' + lastProgress + ', now ' + value + ')');
    }
    lastProgress = value;
    if (config.progress) notify('progress', stringify({ progress: value, total: total, message: message }));
  };
  ctx.log = function log(level, data) {
    const usage = 'ctx.log(level, data): ';
    const at = typeof level === 'string' ? logLevels.indexOf(level) : -1;
    if (at === -1) throw new TypeErrorClass(usage + 'level is one of ' + logLevels.join(', '));
    const kind = typeof data;
    if (kind === 'undefined' || kind === 'function' || kind === 'symbol' || kind === 'bigint') {
      throw new TypeErrorClass(usage + 'data is JSON: a string, number, boolean, null, array or object');
    }
    // Serialising is the costly part: only for a line the caller hears.
    if (threshold === -1 || at < threshold) return;
    let json;
    try {
      json = stringify(data);
    } catch (thrown) {
      throw new TypeErrorClass(usage + 'data is not JSON (' + text(thrown) + ')');
    }
    if (typeof json !== 'string') throw new TypeErrorClass(usage + 'data is not JSON');
    notify('log', level, json);
  };

  // ctx.elicit, ctx.sample and ctx.roots: requests to the call's client (MCP elicitation,
  // sampling, roots). An answer the client already gave (by key) is returned; otherwise the request
  // is noted and the promise never settles: once nothing else can go on, the call ends asking the
  // client, and its retry with the answers runs the tool again from the start. A capability the
  // client did not declare is an error the tool may catch.
  const input = config.input;
  const declared = input === null ? {} : input.capabilities;
  const answers = input === null ? {} : input.responses;
  const hasOwn = Object.prototype.hasOwnProperty;
  ctx.client = freeze({
    elicitation: declared.elicitation === true,
    sampling: declared.sampling === true,
    roots: declared.roots === true,
  });
  const counters = { elicitation: 0, sampling: 0, roots: 0 };
  const asked = {};
  let askedCount = 0;
  const keyPattern = /^[A-Za-z0-9_.:-]{1,64}$/;
  function ask(fn, capability, method, params, options, check) {
    const usage = 'ctx.' + fn + ': ';
    if (options === undefined || options === null) options = {};
    if (typeof options !== 'object') throw new TypeErrorClass(usage + 'options is an object, e.g. { key: "name" }');
    counters[capability] += 1;
    let key = options.key;
    if (key === undefined) key = fn + '-' + counters[capability];
    if (typeof key !== 'string' || !keyPattern.test(key)) {
      throw new TypeErrorClass(usage + 'options.key is 1-64 letters, digits or _ . : -');
    }
    if (declared[capability] !== true) {
      notify('missing', capability);
      const error = new ErrorClass(usage + 'the client did not declare the ' + capability + ' capability, so it cannot be asked (check ctx.client.' + capability + ' first)');
      error.code = 'MISSING_CLIENT_CAPABILITY';
      throw error;
    }
    if (hasOwn.call(answers, key)) {
      const answer = answers[key];
      const problem = check(answer);
      if (problem !== null) {
        throw new TypeErrorClass(usage + 'the client answered "' + key + '" with ' + problem);
      }
      notify('answered', key);
      return Promise.resolve(answer);
    }
    if (!hasOwn.call(asked, key)) {
      askedCount += 1;
      if (askedCount > config.maxInputRequests) {
        throw new RangeErrorClass(usage + 'a call may ask its client at most ' + config.maxInputRequests + ' things at once');
      }
      asked[key] = true;
      notify('input', key, stringify({ method: method, params: params }));
    }
    return new Promise(function () {});
  }
  const isObject = (value) => typeof value === 'object' && value !== null && !isArray(value);
  ctx.elicit = function elicit(message, requestedSchema, options) {
    const usage = 'ctx.elicit(message, requestedSchema, options): ';
    if (typeof message !== 'string') throw new TypeErrorClass(usage + 'message is a string');
    if (!isObject(requestedSchema) || requestedSchema.type !== 'object') {
      throw new TypeErrorClass(usage + 'requestedSchema is a JSON Schema of an object ({ type: "object", properties: ... })');
    }
    return ask('elicit', 'elicitation', 'elicitation/create', { message: message, requestedSchema: requestedSchema }, options, function (answer) {
      if (!isObject(answer)) return 'something other than an object';
      if (answer.action !== 'accept' && answer.action !== 'decline' && answer.action !== 'cancel') {
        return 'an action other than accept, decline or cancel';
      }
      if (answer.content !== undefined && !isObject(answer.content)) return 'content that is not an object';
      return null;
    });
  };
  ctx.sample = function sample(request, options) {
    const usage = 'ctx.sample(request, options): ';
    let params = request;
    if (typeof request === 'string') {
      params = { messages: [{ role: 'user', content: { type: 'text', text: request } }], maxTokens: 1000 };
    }
    if (!isObject(params) || !isArray(params.messages) || typeof params.maxTokens !== 'number') {
      throw new TypeErrorClass(usage + 'request is a prompt string, or MCP sampling params ({ messages, maxTokens, ... })');
    }
    return ask('sample', 'sampling', 'sampling/createMessage', params, options, function (answer) {
      if (!isObject(answer)) return 'something other than an object';
      if (answer.content === undefined || answer.content === null || typeof answer.content !== 'object') {
        return 'no content (a sampling result has role, content and model)';
      }
      return null;
    });
  };
  ctx.roots = function roots(options) {
    return ask('roots', 'roots', 'roots/list', {}, options, function (answer) {
      if (!isObject(answer) || !isArray(answer.roots)) return 'no roots array';
      return null;
    }).then(function (answer) {
      return answer.roots;
    });
  };

  const secrets = {};
  const names = keys(config.secrets);
  for (let i = 0; i < names.length; i += 1) {
    defineProperty(secrets, names[i], { value: config.secrets[names[i]], enumerable: true });
  }
  ctx.secrets = freeze(secrets);
  freeze(ctx);

  // A rule's refusal names the rule, its path and the table: only those (short strings) cross back.
  function ruleOf(details) {
    if (typeof details !== 'object' || details === null) return undefined;
    const out = {};
    const fields = ['rule', 'path', 'table_id'];
    for (let i = 0; i < fields.length; i += 1) {
      const value = details[fields[i]];
      if (typeof value === 'string') out[fields[i]] = value.slice(0, 1024);
    }
    return out;
  }

  function describe(thrown) {
    try {
      if (thrown instanceof ErrorClass || (typeof thrown === 'object' && thrown !== null && typeof thrown.message === 'string')) {
        return stringify({
          error: true,
          name: text(thrown.name === undefined ? 'Error' : thrown.name).slice(0, 100),
          message: text(thrown.message).slice(0, maxMessage),
          code: typeof thrown.code === 'string' ? thrown.code : null,
          details: ruleOf(thrown.details),
          stack: typeof thrown.stack === 'string' ? thrown.stack.slice(0, 2000) : '',
        });
      }
      return stringify({
        error: false,
        type: thrown === null ? 'null' : typeof thrown,
        message: text(thrown).slice(0, maxMessage),
      });
    } catch (_) {
      return '{"error":false,"type":"unknown","message":"a value that cannot be described"}';
    }
  }

  return async function run(main, argsJson) {
    try {
      const value = await main(parse(argsJson), ctx);
      if (value === undefined) return '1null';
      let json;
      try {
        json = stringify(value);
      } catch (thrown) {
        return '2' + describe(thrown);
      }
      if (typeof json !== 'string') {
        return '2' + stringify({ error: false, type: typeof value, message: 'a ' + typeof value + ' is not JSON' });
      }
      if (json.length > config.maxResultBytes) return '3' + json.length;
      return '1' + json;
    } catch (thrown) {
      return '0' + describe(thrown);
    }
  };
})`;
