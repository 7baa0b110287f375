// Preloaded into a gateway by allocations.ts (`--import`): SIGUSR2 starts V8's sampling heap profiler with the
// objects the collectors freed included, so that it counts every allocation, not what is alive; the next SIGUSR2 stops
// it and writes the profile to $ALLOCATION_PROFILE. Plain JavaScript, so that the bare proxy and the floor load it as
// they are.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
let sampling = false;
process.on('SIGUSR2', () => {
  if (!sampling) {
    sampling = true;
    session.post('HeapProfiler.enable', () =>
      session.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true }),
    );
    return;
  }
  session.post('HeapProfiler.stopSampling', (err, r) => {
    if (err) throw err;
    writeFileSync(process.env.ALLOCATION_PROFILE, JSON.stringify(r.profile));
  });
});
