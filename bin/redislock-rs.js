#!/usr/bin/env node
'use strict'

// The redislock-rs command line: see lib/cli/ and `redislock-rs --help`.
require('../lib/cli').main(process.argv.slice(2)).then((code) => {
  process.exitCode = code
})
