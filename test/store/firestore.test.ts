import test from 'ava';
import { startEmulator } from '../support/firestore-emulator.js';
import { storeContract } from './contract.js';

storeContract(test, {
  name: 'firestore',
  async backend(t) {
    const emulator = await startEmulator(t);
    return {
      open: () => emulator.store(t),
      async breakFor() {
        emulator.kill();
      },
    };
  },
});
