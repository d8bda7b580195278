// Keeps the PluginHost it was handed on globalThis, so a test can look at everything a
// plugin is given (its config above all: it must hold no secret).
export default function hostprobe(host) {
  globalThis.keywardProbedHost = host;
  return { name: 'hostprobe', onDone() {} };
}
