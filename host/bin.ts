#!/usr/bin/env node
// `ptc` from source: node host/bin.ts <command>.
import { main } from './cli.ts';

process.exitCode = await main(process.argv.slice(2));
