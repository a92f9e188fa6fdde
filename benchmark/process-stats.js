'use strict'

/**
 * What the soak runs read off their own process: the thread count, and a
 * settle that lets the garbage collector run (with --expose-gc) before a
 * memory reading.
 */

const fs = require('fs')

/** This process's thread count (/proc/self/status), NaN where there is none. */
function threads () {
  const m = /^Threads:\s+(\d+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))
  return m ? Number(m[1]) : NaN
}

/** Five rounds of gc() and a 50 ms pause, so that a reading shows what is live. */
async function settle () {
  for (let i = 0; i < 5; i++) {
    if (global.gc) global.gc()
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

module.exports = { threads, settle }
