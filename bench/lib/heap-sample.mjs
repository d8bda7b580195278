// Preload for the alloc row (bench/rows/alloc.ts, node --import): the first SIGUSR2 starts V8's sampling heap profiler, with the
// objects minor and major GCs collect kept (a proxy's allocations are mostly garbage); the second writes the
// profile to HEAP_OUT. In-process through node:inspector, so nothing listens on a port.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
let sampling = false;
process.on('SIGUSR2', async () => {
  if (!sampling) {
    sampling = true;
    await session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMinorGC: true, includeObjectsCollectedByMajorGC: true });
  } else {
    const { profile } = await session.post('HeapProfiler.stopSampling');
    writeFileSync(process.env.HEAP_OUT, JSON.stringify(profile));
  }
});
