#!/usr/bin/env node
// `ptc` from source: node host/bin.ts <command>.
import { prestartForCli } from '../runtime/prestart.ts';

const argv = process.argv.slice(2);
await prestartForCli(argv);
const { main } = await import('./cli.ts');
process.exitCode = await main(argv);
