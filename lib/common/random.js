'use strict'

/**
 * Lock values: 16 random bytes as 32 hex characters, from a pool of
 * crypto-random bytes refilled 4 KiB at a time (one `randomFillSync` per
 * 256 values instead of one `randomBytes` each: that call was a tenth of
 * the node-redlock faces' CPU per lock). The same source as
 * `crypto.randomBytes`; a value is never handed out twice.
 */

const crypto = require('crypto')

const POOL = Buffer.alloc(4096)
let offset = POOL.length

/** 16 fresh random bytes, hex. */
function randomHex16 () {
  if (offset + 16 > POOL.length) {
    crypto.randomFillSync(POOL)
    offset = 0
  }
  const hex = POOL.toString('hex', offset, offset + 16)
  offset += 16
  return hex
}

module.exports = { randomHex16 }
