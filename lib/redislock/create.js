'use strict'

const Lock = require('./lock')
const QuorumLock = require('./quorum')

/**
 * A new Lock using `client` (a Redis client, URL or options object); an
 * array of them gives one lock on those independent servers (Redlock).
 */
function createLock (client, options) {
  if (Array.isArray(client)) return new QuorumLock(client, options, Lock._defaults, Lock._acquiredLocks)
  return new Lock(client, options)
}

module.exports = { createLock }
