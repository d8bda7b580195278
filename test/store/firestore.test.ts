import test from 'ava';
import { startEmulator } from '../support/firestore-emulator.js';
import { storeContract } from './contract.js';

storeContract(test, {
  name: 'firestore',
  async backend(t) {
    const emulator = await startEmulator(t);
    return {
      open: () => emulator.store(),
      outage: {
        open: () => emulator.store({ callTimeoutMs: 1500, pingTimeoutMs: 1000 }),
        break: async () => emulator.kill(),
        mend: () => emulator.revive(),
      },
    };
  },
});
