// Keeps the PluginHost it was handed on globalThis, so a test can look at everything a
// plugin is given (its config above all: it must hold no secret).
export default {
  apiVersion: 1,
  name: 'hostprobe',
  priority: 400,
  create(host) {
    globalThis.keywardProbedHost = host;
    return { log() {} };
  },
};
