#!/usr/bin/env node
// `ptc` from source: node host/cli/bin.ts <command>.
// First: an older Node is refused by version before a module that needs a newer one evaluates.
import './require-node.ts';
import { prestartDefaultCarrier } from '../prestart.ts';
import { runsInDefaultCarrier } from './head-start.ts';

const argv = process.argv.slice(2);
if (runsInDefaultCarrier(argv)) await prestartDefaultCarrier();
const { main } = await import('./cli.ts');
process.exitCode = await main(argv);
