import { afterAll } from 'vitest';
import { killLeftServers } from './spawn-parley.ts';

// After every test file (vitest's setupFiles): its forked worker is ended without running
// `exit` handlers, so a server it left running would outlive it for the rest of the suite.
afterAll(() => {
  const left = killLeftServers();
  if (left > 0) console.warn(`stopped ${left} Parley server(s) this test file left running`);
});
