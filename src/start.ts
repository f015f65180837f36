import { enableCompileCache } from 'node:module';

/**
 * The entry point (`npm start`). Before anything else is loaded, Node's module compile cache is
 * turned on: Node then keeps each module's type-stripped source and V8 code on disk (in the
 * system's temporary directory, or NODE_COMPILE_CACHE; NODE_DISABLE_COMPILE_CACHE=1 turns it
 * off), and the next start reads them instead of compiling the server's modules again (about 0.4 s of
 * a 2 s start on a quiet two-core machine, bench/RESULTS.md). It must come first
 * because an ES module's static imports are all compiled before any of its code runs; the
 * server's modules are therefore imported from here, after the call. Setting the variable also
 * hands the cache to the PGlite thread and to PARLEY_WORKERS' processes, which inherit it.
 */
const cache = enableCompileCache();
if (cache.directory && !process.env.NODE_COMPILE_CACHE) {
  process.env.NODE_COMPILE_CACHE = cache.directory;
}
await import('./launch.ts');
