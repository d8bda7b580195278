// Bench only: preloaded into Keyward by the soak-10k and realtime rows (`node --import bench/lib/loop-probe.mjs
// dist/src/main.js`), never by the product. Measures the event loop's delay with
// perf_hooks.monitorEventLoopDelay (10 ms resolution) and answers the parent over IPC:
//   { probe: 'reset' }  → starts a new measurement (and a new window)
//   { probe: 'mark' }   → { probe: 'mark', ...window } and starts a new window
//   { probe: 'report' } → { probe: 'report', ...since reset, window: { ...since the last mark } }
// each as { p50, p99, max, mean (ms), count }.
import { monitorEventLoopDelay } from 'node:perf_hooks';

const whole = monitorEventLoopDelay({ resolution: 10 });
const window = monitorEventLoopDelay({ resolution: 10 });
whole.enable();
window.enable();
const ms = (ns) => Math.round(ns / 1e3) / 1e3;
const summary = (h) => ({ p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), mean: ms(h.mean), count: h.count });
if (process.send) {
  process.on('message', (m) => {
    if (m?.probe === 'reset') {
      whole.reset();
      window.reset();
    } else if (m?.probe === 'mark') {
      process.send({ probe: 'mark', ...summary(window) });
      window.reset();
    } else if (m?.probe === 'report') {
      process.send({ probe: 'report', ...summary(whole), window: summary(window) });
    }
  });
}
