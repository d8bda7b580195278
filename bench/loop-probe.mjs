// Bench only: preloaded into Keyward by bench/soak-10k.ts (`node --import bench/loop-probe.mjs
// dist/src/main.js`), never by the product. Measures the event loop's delay with
// perf_hooks.monitorEventLoopDelay (10 ms resolution) and answers the parent over IPC:
//   { probe: 'reset' }  → starts a new window
//   { probe: 'report' } → { probe: 'report', p50, p99, max, mean (ms), count }
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
if (process.send) {
  process.on('message', (m) => {
    if (m?.probe === 'reset') histogram.reset();
    else if (m?.probe === 'report') {
      const ms = (ns) => Math.round(ns / 1e3) / 1e3;
      process.send({ probe: 'report', p50: ms(histogram.percentile(50)), p99: ms(histogram.percentile(99)), max: ms(histogram.max), mean: ms(histogram.mean), count: histogram.count });
    }
  });
}
