#!/usr/bin/env node
/**
 * The `keyward` executable (package.json `bin`): switches on Node's on-disk compile cache, then runs the command
 * line (main.ts). Why a file of its own: a module's static imports are compiled before its body runs, so the cache
 * must be on before main.ts is imported. With it a command after the first reuses the bytecode of the modules it
 * loads (checked against each file's content and Node's version) instead of compiling them: about a quarter of a
 * short command's CPU. NODE_DISABLE_COMPILE_CACHE=1 switches it off; `node dist/src/cli/main.js` runs the same
 * commands without it.
 */
import { enableCompileCache } from 'node:module';

enableCompileCache();
const { runFromProcess } = await import('./main.js');
runFromProcess();
